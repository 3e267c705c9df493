"""Impact analysis: everything downstream of a table (or one of its columns), grouped by layer,
with exposures, owners and criticality — "what did we build on that broken feed?"
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from medallion_assets.lineage.graph import CRITICALITY_RANK, LineageGraph, Node, max_criticality

LAYER_ORDER = ("raw", "bronze", "silver", "gold", "exposure")
_LAYER_RANK = {layer: rank for rank, layer in enumerate(LAYER_ORDER)}


class ImpactedNode(NamedTuple):
    """One impacted table or exposure. A NamedTuple: a report may hold tens of thousands."""

    id: str
    kind: str
    layer: str
    depth: int
    criticality: str
    owners: tuple[str, ...]
    columns: tuple[str, ...] = ()  # with --column: the columns of this table the value reaches


@dataclass(frozen=True)
class _Totals:
    tables_by_layer: dict[str, int]
    exposures: int
    critical: int
    highest: str | None
    owners: tuple[str, ...]


class ImpactReport:
    """The walk's result; rows and totals are built on first use, once.

    A table-level impact in a large graph reaches tens of thousands of nodes: the summary and
    ``--fail-on`` need only totals, so sorted per-node rows are built only for a listing.
    """

    def __init__(
        self,
        root: str,
        column: str | None,
        reached: Mapping[str, int],
        columns: Mapping[str, list[str]],
        graph_nodes: Mapping[str, Node],
    ):
        self.root = root
        self.column = column
        self._reached = reached
        self._columns = columns
        self._graph_nodes = graph_nodes

    @functools.cached_property
    def nodes(self) -> tuple[ImpactedNode, ...]:
        """Impacted nodes ordered by layer, then depth, then name."""
        keyed = []
        for node_id, depth in self._reached.items():
            node = self._graph_nodes[node_id]
            found = tuple(sorted(self._columns[node_id])) if node_id in self._columns else ()
            impacted = ImpactedNode(
                node_id, node.kind, node.layer, depth, node.criticality, node.owners, found
            )
            keyed.append(((_LAYER_RANK.get(node.layer, 99), depth, node_id), impacted))
        keyed.sort(key=lambda pair: pair[0])
        return tuple(n for _, n in keyed)

    @functools.cached_property
    def _totals(self) -> _Totals:
        by_layer: dict[str, int] = {}
        exposures = critical = 0
        highest = -1
        owners: set[str] = set()
        for node_id in self._reached:
            node = self._graph_nodes[node_id]
            if node.kind == "exposure":
                exposures += 1
            else:
                by_layer[node.layer] = by_layer.get(node.layer, 0) + 1
            rank = CRITICALITY_RANK[node.criticality]
            critical += rank == CRITICALITY_RANK["critical"]
            highest = max(highest, rank)
            owners.update(node.owners)
        ordered = {k: by_layer[k] for k in sorted(by_layer, key=lambda k: _LAYER_RANK.get(k, 99))}
        top = max_criticality(c for c, r in CRITICALITY_RANK.items() if r == highest)
        return _Totals(ordered, exposures, critical, top, tuple(sorted(owners)))

    def by_layer(self) -> dict[str, list[ImpactedNode]]:
        groups: dict[str, list[ImpactedNode]] = {layer: [] for layer in LAYER_ORDER}
        for node in self.nodes:
            groups.setdefault(node.layer, []).append(node)
        return {layer: nodes for layer, nodes in groups.items() if nodes}

    @property
    def exposures(self) -> list[ImpactedNode]:
        return [n for n in self.nodes if n.kind == "exposure"]

    @property
    def owners(self) -> tuple[str, ...]:
        return self._totals.owners

    @property
    def highest_criticality(self) -> str | None:
        return self._totals.highest

    def reaches(self, level: str) -> list[ImpactedNode]:
        """Impacted nodes at ``level`` criticality or above (for ``--fail-on``)."""
        floor = CRITICALITY_RANK[level]
        return [n for n in self.nodes if CRITICALITY_RANK[n.criticality] >= floor]

    def summary(self) -> str:
        totals = self._totals
        start = f"{self.root}.{self.column}" if self.column else self.root
        layers = ", ".join(f"{count} {layer}" for layer, count in totals.tables_by_layer.items())
        return (
            f"{start}: {sum(totals.tables_by_layer.values())} downstream table(s) "
            f"({layers or 'none'}), {totals.exposures} exposure(s), {totals.critical} critical, "
            f"highest criticality {totals.highest or 'none'}, "
            f"{len(totals.owners)} owner(s) to notify"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "column": self.column,
            "summary": self.summary(),
            "highest_criticality": self.highest_criticality,
            "owners": list(self.owners),
            "layers": {
                layer: [
                    {
                        "id": n.id,
                        "depth": n.depth,
                        "criticality": n.criticality,
                        "owners": list(n.owners),
                        "columns": list(n.columns),
                    }
                    for n in nodes
                ]
                for layer, nodes in self.by_layer().items()
            },
        }


def impact(graph: LineageGraph, table: str, column: str | None = None) -> ImpactReport:
    """Downstream impact of ``table``, or only of ``table.column`` when a column is given."""
    graph.node(table)
    if column is None:
        reached = graph.downstream(table)
        columns: dict[str, list[str]] = {}
    else:
        reached, columns = _column_impact(graph, table, column)
    return ImpactReport(table, column, reached, columns, graph.nodes)


def _column_impact(
    graph: LineageGraph, table: str, column: str
) -> tuple[dict[str, int], dict[str, list[str]]]:
    start = f"{table}.{column}"
    node = graph.node(table)
    if node.columns and column not in node.columns:
        raise KeyError(f"{table} has no column {column!r}; its columns: {', '.join(node.columns)}")
    reached: dict[str, int] = {}
    columns: dict[str, list[str]] = {}
    for target, depth in graph.column_downstream(start).items():
        owner, name = target.rsplit(".", 1)
        columns.setdefault(owner, []).append(name)
        reached[owner] = min(depth, reached.get(owner, depth))
    # Exposures consume whole tables: an exposure of a reached table is reached too.
    for owner, depth in list(reached.items()):
        for child in graph.dag.children(owner):
            if graph.nodes[child].kind == "exposure":
                reached[child] = min(depth + 1, reached.get(child, depth + 1))
    return reached, columns
