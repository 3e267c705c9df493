"""The tables' dependency graph (lineage, checks' reads, recovery edges) and the cycles a
project must not have: through alternates or backups, or through a check reading a table
that depends on the checked one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from medallion_assets.catalog import models
from medallion_assets.catalog import sources as source_models
from medallion_assets.catalog.base import LAYERS
from medallion_assets.catalog.catalog import Dataset
from medallion_assets.catalog.errors import CatalogIssue
from medallion_assets.lineage.dag import DAG, CycleError
from medallion_assets.lineage.graph import ColumnEdge, LineageGraph, Node


def _layer_rank(table: str) -> int:
    layer = table.split(".", 1)[0]
    return LAYERS.index(layer) if layer in LAYERS else len(LAYERS)


def check_recovery_cycles(datasets: Mapping[str, Dataset]) -> list[CatalogIssue]:
    """Declared recovery edges may not close a cycle: an alternate producer rebuilds the table
    from its inputs, so alternates with the lineage must stay a DAG (recovering a table must
    never need the table); a backup is read as it is published, so backups may copy the table
    they back (a snapshot), but two tables may not back each other up, in a ring of any size.
    Names the cycle and the table whose declaration closes it."""
    lineage = [(u, n) for n, d in datasets.items() for u in d.upstream if u in datasets]
    rebuilt = {
        (u, n): a
        for n, d in datasets.items()
        for a in d.alternates
        if a.kind == "alternate"
        for u in a.upstream
        if u in datasets
    }
    copies = {
        (u, n): a
        for n, d in datasets.items()
        for a in d.alternates
        if a.kind == "backup"
        for u in a.upstream
        if u in datasets
    }
    for edges, declared, kind, fix in (
        (
            lineage + list(rebuilt),
            rebuilt,
            "alternates",
            "an alternate may not read a table built from the table it produces: remove it or "
            "read other tables",
        ),
        (
            list(copies),
            copies,
            "backups",
            "two tables may not back each other up: remove one backup of the ring",
        ),
    ):
        try:
            DAG(list(datasets), edges).levels()
        except CycleError as error:
            cycle = [str(n) for n in error.cycle]
            closing = [
                (cycle[i + 1], declared[(cycle[i], cycle[i + 1])])
                for i in range(len(cycle) - 1)
                if (cycle[i], cycle[i + 1]) in declared
            ]
            table, producer = closing[0] if closing else (cycle[0], None)
            via = f" ({table} via {producer.name})" if producer is not None else ""
            return [
                CatalogIssue(
                    "metadata/datasets.yaml",
                    f"datasets.{table}.{kind}",
                    f"recovery edges form a {error}{via}",
                    fix,
                )
            ]
    return []


def build_graph(
    sources: Mapping[str, source_models.Source],
    datasets: Mapping[str, Dataset],
    exposures: Sequence[models.Exposure],
) -> LineageGraph:
    nodes = [
        Node(
            f"raw.{name}",
            "source",
            "raw",
            "normal",
            source.owners,
            None,
            tuple(c.name for c in source.columns),
            source.pii_columns,
        )
        for name, source in sources.items()
    ]
    nodes += [
        Node(
            d.name,
            "dataset",
            d.layer,
            d.criticality,
            d.owners,
            d.sql_path,
            d.column_names,
            d.pii_columns,
        )
        for d in datasets.values()
    ]
    nodes += [
        Node(f"exposure.{e.name}", "exposure", "exposure", e.criticality, e.owners)
        for e in exposures
    ]
    edges = [(u, d.name) for d in datasets.values() for u in d.upstream]
    edges += [(t, f"exposure.{e.name}") for e in exposures for t in e.depends_on]
    column_edges = [
        ColumnEdge(source, f"{d.name}.{c.column}", c.transform)
        for d in datasets.values()
        for c in d.columns
        for source in c.sources
    ]
    return LineageGraph(nodes, edges, column_edges)


def check_dependency_issues(datasets: Mapping[str, Dataset]) -> list[CatalogIssue]:
    """A check may read another table only if that table does not depend on the checked one:
    it is built first, so the two together must still form a DAG."""
    edges = [(u, n) for n, d in datasets.items() for u in d.upstream if u in datasets]
    extra = [(t, n) for n, d in datasets.items() for t in d.check_dependencies if t in datasets]
    try:
        DAG(list(datasets), edges + extra).levels()
    except CycleError as error:
        checked = [n for n in map(str, error.cycle) if datasets[n].check_dependencies]
        return [
            CatalogIssue(
                "metadata/datasets.yaml",
                f"datasets.{checked[0] if checked else error.cycle[0]}.rules",
                f"a check reads a table built from the checked table: {error}",
                "a referential_integrity or sql check may only read tables the checked table "
                "does not feed; check the relationship on the downstream table instead",
            )
        ]
    return []
