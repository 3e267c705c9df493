"""Impact analysis: everything downstream of a table (or one of its columns), grouped by layer,
with exposures, owners and criticality — "what did we build on that broken feed?"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medallion_assets.lineage.graph import CRITICALITY_RANK, LineageGraph, max_criticality

LAYER_ORDER = ("raw", "bronze", "silver", "gold", "exposure")


@dataclass(frozen=True)
class ImpactedNode:
    id: str
    kind: str
    layer: str
    depth: int
    criticality: str
    owners: tuple[str, ...]
    columns: tuple[str, ...] = ()  # with --column: the columns of this table the value reaches


@dataclass(frozen=True)
class ImpactReport:
    root: str
    column: str | None
    nodes: tuple[ImpactedNode, ...]

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
        return tuple(sorted({o for n in self.nodes for o in n.owners}))

    @property
    def highest_criticality(self) -> str | None:
        return max_criticality(n.criticality for n in self.nodes)

    def reaches(self, level: str) -> list[ImpactedNode]:
        """Impacted nodes at ``level`` criticality or above (for ``--fail-on``)."""
        floor = CRITICALITY_RANK[level]
        return [n for n in self.nodes if CRITICALITY_RANK[n.criticality] >= floor]

    def summary(self) -> str:
        start = f"{self.root}.{self.column}" if self.column else self.root
        tables = [n for n in self.nodes if n.kind != "exposure"]
        layers = ", ".join(
            f"{len(nodes)} {layer}"
            for layer, nodes in self.by_layer().items()
            if layer != "exposure"
        )
        critical = len(self.reaches("critical"))
        return (
            f"{start}: {len(tables)} downstream table(s) ({layers or 'none'}), "
            f"{len(self.exposures)} exposure(s), {critical} critical, "
            f"highest criticality {self.highest_criticality or 'none'}, "
            f"{len(self.owners)} owner(s) to notify"
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
    nodes = []
    for node_id, depth in reached.items():
        node = graph.nodes[node_id]
        nodes.append(
            ImpactedNode(
                node.id,
                node.kind,
                node.layer,
                depth,
                node.criticality,
                node.owners,
                tuple(sorted(columns.get(node_id, ()))),
            )
        )
    order = {layer: i for i, layer in enumerate(LAYER_ORDER)}
    nodes.sort(key=lambda n: (order.get(n.layer, 99), n.depth, n.id))
    return ImpactReport(table, column, tuple(nodes))


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
