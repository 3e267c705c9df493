"""The fully derived catalog as plain data (``medallion catalog show``): what the original
relational design filled in by hand — sources, targets, stages, lineage edges — computed here.
"""

from __future__ import annotations

from typing import Any

from medallion_assets.catalog.catalog import Catalog, Dataset
from medallion_assets.lineage.incremental import possible_kinds
from medallion_assets.lineage.statement import SqlError, parse_script


def column_descriptions(
    catalog: Catalog, table: str, known: dict[str, dict[str, str]] | None = None
) -> dict[str, str]:
    """Column -> description of ``table``: a source's from sources.yaml; a column taken from
    one upstream column, unchanged or under its own name (a cast, a trim), keeps that column's
    description, layer after layer. ``known`` keeps what was found, for a caller asking about
    many tables.

    >>> from medallion_assets.catalog import load_catalog
    >>> column_descriptions(load_catalog("."), "silver.orders_usd")["order_ts"]
    'When the order was placed (UTC).'
    """
    return _descriptions(catalog, table, {} if known is None else known)


def _descriptions(catalog: Catalog, table: str, known: dict[str, dict[str, str]]) -> dict[str, str]:
    if table in known:
        return known[table]
    found: dict[str, str] = {}
    if table.startswith("raw."):
        source = catalog.sources.get(table[4:])
        found = {c.name: c.description for c in source.columns if c.description} if source else {}
    elif table in catalog.datasets:
        for column in catalog.datasets[table].columns:
            if len(column.sources) != 1:
                continue
            upstream, name = column.sources[0].rsplit(".", 1)
            if column.transform in ("direct", "star") or name == column.column:
                said = _descriptions(catalog, upstream, known).get(name)
                if said:
                    found[column.column] = said
    known[table] = found
    return found


def describe(catalog: Catalog) -> dict[str, Any]:
    return {
        "project": catalog.project.name,
        "dialect": catalog.project.dialect,
        "sources": {f"raw.{n}": _source(catalog, n) for n in catalog.sources},
        "datasets": {name: _dataset(catalog, d) for name, d in catalog.datasets.items()},
        "targets": {t: target.model_dump(mode="json") for t, target in catalog.targets.items()},
        "exposures": {
            f"exposure.{name}": e.model_dump(mode="json") for name, e in catalog.exposures.items()
        },
        "pipelines": {
            pid: {
                "schedule": p.schedule,
                "enabled": p.enabled,
                "owners": list(p.owners),
                "datasets": list(catalog.pipeline_datasets(pid)),
            }
            for pid, p in catalog.pipelines.items()
        },
        "lineage_edges": [{"from": u, "to": d} for u, d in catalog.lineage.dag.edges()],
        "column_edges": len(catalog.lineage.column_edges),
        "execution_levels": catalog.lineage.levels(),
    }


def _source(catalog: Catalog, name: str) -> dict[str, Any]:
    source = catalog.sources[name]
    return {
        "system": source.system,
        "location": f"s3://{source.bucket}/{source.prefix}",
        "partition": source.partition,
        "format": source.format,
        "columns": [
            f"{c.name} {c.type}{'' if c.nullable else ' not null'}" for c in source.columns
        ],
        "pii_columns": list(source.pii_columns),
        "replicas": [
            f"{r.name}: s3://{r.bucket}/{r.prefix} (cost {r.cost})" for r in source.replicas
        ],
        "throttle": _throttle(catalog, source.system),
    }


def _throttle(catalog: Catalog, system: str) -> dict[str, Any]:
    found = catalog.systems.get(system)
    if found is None:
        return {}
    return {"system": system, **found.throttle.model_dump(exclude_none=True)}


def _dataset(catalog: Catalog, dataset: Dataset) -> dict[str, Any]:
    return {
        "layer": dataset.layer,
        "sql": dataset.sql_path,
        "dialect": dataset.dialect,
        "statement": dataset.statement_kind,
        "upstream": list(dataset.upstream),
        "columns": [
            {
                "name": c.column,
                "type": c.type,
                "from": list(c.sources),
                "transform": c.transform,
                **({"unresolved": c.unresolved} if c.unresolved else {}),
            }
            for c in dataset.columns
        ],
        "criticality": dataset.criticality,
        "owners": list(dataset.owners),
        "tags": list(dataset.tags),
        "pii_columns": list(dataset.pii_columns),
        "checks": [
            {"name": r.label(), "kind": r.kind, "severity": r.severity} for r in dataset.rules
        ],
        "system": dataset.system,
        "throttle": _throttle(catalog, dataset.system),
        "target": dataset.target.warehouse_table if dataset.target else None,
        "alternates": [
            {"name": a.name, "sql": a.sql_path, "upstream": list(a.upstream), "cost": a.cost}
            for a in dataset.alternates
        ],
        "partitions": dataset.settings.partitions.model_dump(mode="json")
        if dataset.settings.partitions
        else None,
        "kind": dataset.settings.kind,
        **({"keys": list(dataset.settings.keys)} if dataset.settings.keys else {}),
        **({"keyed_inputs": keyed} if (keyed := keyed_inputs(dataset)) else {}),
        **({"could_be": could} if (could := suggested_kinds(catalog, dataset)) else {}),
        "code_version": dataset.code_version,
    }


def keyed_inputs(dataset: Dataset) -> dict[str, dict[str, str]]:
    """A merge table's inputs besides its driving one whose changes are merged too: input ->
    {the driving column it is joined to: its column}. (A change to any other input rebuilds
    it.)"""
    plan = dataset.incremental
    if plan is None:
        return {}
    return {table: dict(pairs) for table, pairs in plan.keyed}


def suggested_kinds(catalog: Catalog, dataset: Dataset) -> list[str]:
    """The incremental kinds a ``full`` table's SQL would honour, as datasets.yaml would say
    them (a suggestion for ``catalog show``, never applied): none for bronze, for a table
    already incremental, for a daily table (each run rebuilds only its days already), or when
    a daily input would drive a table without days.

    >>> from medallion_assets.catalog import load_catalog
    >>> demo = load_catalog(".")
    >>> suggested_kinds(demo, demo.datasets["silver.users_masked"])
    ['append', 'merge on customer_id']
    """
    settings = dataset.settings
    if dataset.layer == "bronze" or settings.kind != "full" or settings.partitions is not None:
        return []
    if any(
        catalog.datasets[u].settings.partitions is not None
        for u in dataset.upstream
        if u in catalog.datasets
    ):
        return []
    try:
        _, statement = parse_script(dataset.sql, dataset.dialect, dataset.name)
    except SqlError:
        return []
    schema = {
        upstream: {c.column: c.type or "unknown" for c in catalog.datasets[upstream].columns}
        for upstream in statement.sources
        if upstream in catalog.datasets
        and not any(c.column == "*" for c in catalog.datasets[upstream].columns)
    }
    return possible_kinds(statement, schema)
