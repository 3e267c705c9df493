"""The seam between the catalog and Dagster: one catalog object in, one ``AssetSpec`` out.

Spec-building is pure: it reads the catalog and runs nothing, so the whole graph can be built
and tested without Spark. Subclass ``DatasetTranslator`` to change keys, groups or tags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import dagster as dg

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.describe import column_descriptions
from medallion_assets.catalog.models import Exposure
from medallion_assets.catalog.rules import Rule
from medallion_assets.catalog.sources import Source

WAREHOUSE_KINDS = {"redshift", "postgres", "duckdb"}
CHECK_DEP = "medallion/dependency"  # AssetDep metadata: a dependency of checks, not of the SQL


def rule_summary(rule: Rule) -> str:
    """One line describing a rule, for a check without a description of its own."""
    fields = rule.model_dump(exclude={"kind", "name", "severity", "description"}, mode="json")
    shown = ", ".join(f"{k}={v}" for k, v in fields.items() if v not in (None, [], ()))
    blocking = "blocks publishing" if rule.blocking else "warns"
    return f"{rule.kind}({shown}); {blocking} when it fails"


def table_schema(
    columns: Sequence[tuple[str, str | None]], descriptions: Mapping[str, str]
) -> dg.TableSchema:
    """Dagster's column schema: each column's type (blank where the SQL does not tell it
    before a run; a materialization carries the published table's) and description."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name,
                "" if kind in (None, "unknown") else kind,
                description=descriptions.get(name) or None,
            )
            for name, kind in columns
        ]
    )


def table_key(table: str) -> dg.AssetKey:
    """``silver.orders_usd`` -> AssetKey(["silver", "orders_usd"]); raw and exposures alike."""
    return dg.AssetKey(table.split(".", 1))


def step_name(table: str) -> str:
    """The op (and step key) of a table's asset: ``silver.orders_usd`` -> ``silver__orders_usd``."""
    return table.replace(".", "__")


def step_table(step_key: str | None) -> str:
    """The table of a step key: the inverse of ``step_name``."""
    return (step_key or "").replace("__", ".", 1)


class DatasetTranslator:
    def __init__(self, catalog: Catalog, warehouse_kind: str | None = None):
        """``warehouse_kind``: the warehouse in force (``MedallionSettings.warehouse_kind``);
        None: each target's system kind."""
        self.catalog = catalog
        self.warehouse_kind = warehouse_kind
        self._descriptions: dict[str, dict[str, str]] = {}
        # Tables PII reaches unhashed: tagged pii even when the metadata does not say so.
        self._pii_tables = {
            r.column.rsplit(".", 1)[0] for r in catalog.lineage.pii_trace() if r.exposed
        }
        # One daily partitions definition for the whole project, from its earliest start:
        # Dagster puts a pipeline's (or a layer's) tables in one job only when they share one.
        # A table's own later start still holds: its earlier days build nothing (assets.py).
        starts = [
            d.settings.partitions.start
            for d in catalog.datasets.values()
            if d.settings.partitions is not None
        ]
        self._daily = (
            dg.DailyPartitionsDefinition(start_date=min(starts).isoformat()) if starts else None
        )

    def get_asset_spec(self, dataset: Dataset) -> dg.AssetSpec:
        return dg.AssetSpec(
            key=table_key(dataset.name),
            deps=self.deps(dataset),
            description=self.description(dataset),
            group_name=dataset.layer,
            code_version=dataset.code_version,
            owners=list(dataset.owners),
            tags=self.tags(dataset),
            kinds=self.kinds(dataset),
            metadata=self.metadata(dataset),
            partitions_def=self.partitions_def(dataset),
            # A table switched off by the kill switch yields nothing; what depends on it in
            # the run is then skipped by Dagster, not failed.
            skippable=True,
        )

    def deps(self, dataset: Dataset) -> list[dg.AssetDep]:
        """The lineage engine's upstream tables, then the tables the checks read (marked
        ``medallion/dependency: check``): those must be published before this table is
        checked, so Dagster runs them first."""
        deps = [dg.AssetDep(table_key(u)) for u in dataset.upstream]
        lineage = set(dataset.upstream)
        deps += [
            dg.AssetDep(table_key(t), metadata={CHECK_DEP: "check"})
            for t in dataset.check_dependencies
            if t not in lineage
        ]
        return deps

    def get_check_specs(self, dataset: Dataset) -> list[dg.AssetCheckSpec]:
        """One asset check per validation rule; severity error blocks publishing."""
        return [
            dg.AssetCheckSpec(
                name=rule.label(),
                asset=table_key(dataset.name),
                description=rule.description or rule_summary(rule),
                blocking=rule.blocking,
                additional_deps=[table_key(t) for t in rule.referenced_tables()],
                metadata={
                    "kind": rule.kind,
                    "severity": rule.severity,
                    "rule": dg.MetadataValue.json(rule.model_dump(mode="json")),
                },
            )
            for rule in dataset.rules
        ]

    def description(self, dataset: Dataset) -> str:
        if dataset.settings.description:
            return dataset.settings.description
        comments = [
            line.strip().lstrip("-").strip()
            for line in dataset.sql.splitlines()
            if line.strip().startswith("--") and "dialect:" not in line
        ]
        return " ".join(comments[:3]) or f"{dataset.layer} table built from {dataset.sql_path}"

    def tags(self, dataset: Dataset) -> dict[str, str]:
        tags = {
            "layer": dataset.layer,
            "criticality": dataset.criticality,
            "pii": "true" if dataset.pii_columns or dataset.name in self._pii_tables else "false",
            "system": dataset.system,
        }
        for tag in dataset.tags:
            tags[f"tag_{tag}"] = ""  # Dagster shows key-only tags as labels
        return tags

    def kinds(self, dataset: Dataset) -> set[str]:
        kinds = {"spark", "iceberg"}
        if dataset.layer == "bronze":
            kinds.add("s3")
        if dataset.target is not None:
            kind = self.warehouse_kind or self.catalog.systems[dataset.target.system].kind
            kinds.add(kind if kind in WAREHOUSE_KINDS else "warehouse")
        return kinds

    def metadata(self, dataset: Dataset) -> dict[str, object]:
        columns = [c for c in dataset.columns if c.column != "*"]
        lineage = {
            c.column: [
                dg.TableColumnDep(
                    asset_key=table_key(s.rsplit(".", 1)[0]), column_name=s.rsplit(".", 1)[1]
                )
                for s in c.sources
            ]
            for c in columns
        }
        metadata: dict[str, object] = {
            "sql": dg.MetadataValue.md(f"```sql\n{dataset.sql.strip()}\n```"),
            "sql_path": dataset.sql_path,
            "dialect": dataset.dialect,
            "dagster/column_schema": table_schema(
                [(c.column, c.type) for c in columns],
                column_descriptions(self.catalog, dataset.name, self._descriptions),
            ),
            "dagster/column_lineage": dg.TableColumnLineage(deps_by_column=lineage),
        }
        if dataset.target is not None:
            metadata["warehouse_table"] = dataset.target.warehouse_table
            metadata["load_mode"] = dataset.target.mode
        return metadata

    def partitions_def(self, dataset: Dataset) -> dg.PartitionsDefinition[str] | None:
        """The project's daily partitions for a daily table (from the project's earliest
        ``partitions.start``), None for a table built as a whole."""
        return None if dataset.settings.partitions is None else self._daily

    def get_source_spec(self, name: str, source: Source) -> dg.AssetSpec:
        return dg.AssetSpec(
            key=table_key(f"raw.{name}"),
            description=source.description or f"raw S3 source s3://{source.bucket}/{source.prefix}",
            group_name="raw",
            owners=list(source.owners),
            kinds={"s3", source.format},
            tags={
                "layer": "raw",
                "pii": "true" if source.pii_columns else "false",
                "system": source.system,
            },
            metadata={
                "location": f"s3://{source.bucket}/{source.prefix}",
                "partition": source.partition or "",
                "dagster/column_schema": table_schema(
                    [(c.name, c.type) for c in source.columns],
                    {c.name: c.description for c in source.columns},
                ),
            },
        )

    def get_exposure_spec(self, exposure: Exposure) -> dg.AssetSpec:
        return dg.AssetSpec(
            key=table_key(f"exposure.{exposure.name}"),
            deps=[table_key(t) for t in exposure.depends_on],
            description=exposure.description or f"{exposure.type} {exposure.name}",
            group_name="exposures",
            owners=list(exposure.owners),
            kinds={exposure.type},
            tags={"layer": "exposure", "criticality": exposure.criticality},
            metadata={"url": exposure.url or ""},
        )
