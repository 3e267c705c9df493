"""The lineage graph of a project: sources, datasets and exposures, with table and column edges.

Node ids: ``raw.<source>``, ``<layer>.<table>``, ``exposure.<name>``.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from medallion_assets.lineage.dag import DAG

CRITICALITY_RANK = {"low": 0, "normal": 1, "high": 2, "critical": 3}


@dataclass(frozen=True)
class Node:
    id: str
    kind: str  # source | dataset | exposure
    layer: str  # raw | bronze | silver | gold | exposure
    criticality: str = "normal"
    owners: tuple[str, ...] = ()
    file: str | None = None
    columns: tuple[str, ...] = ()
    pii_columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class ColumnEdge:
    source: str  # "table.column"
    target: str
    transform: str


@dataclass(frozen=True)
class SubPipeline:
    sinks: tuple[str, ...]
    tables: tuple[str, ...]  # in execution order


@dataclass(frozen=True)
class PiiReach:
    column: str  # "table.column" that PII reaches
    origins: tuple[str, ...]  # the PII columns it comes from
    exposed: bool  # True when some path carries the value unmasked
    depth: int


class LineageGraph:
    """Table-level DAG plus column edges, with the walks the CLI and the runtime need."""

    def __init__(
        self,
        nodes: Iterable[Node],
        edges: Iterable[tuple[str, str]],
        column_edges: Iterable[ColumnEdge] = (),
    ):
        self.nodes: dict[str, Node] = {n.id: n for n in nodes}
        self.dag: DAG[str] = DAG(self.nodes, edges)
        self.column_edges: tuple[ColumnEdge, ...] = tuple(column_edges)
        self._col_down: dict[str, list[ColumnEdge]] = {}
        self._col_up: dict[str, list[ColumnEdge]] = {}
        for edge in self.column_edges:
            self._col_down.setdefault(edge.source, []).append(edge)
            self._col_up.setdefault(edge.target, []).append(edge)

    def node(self, node_id: str) -> Node:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise KeyError(f"unknown table {node_id!r}") from None

    def upstream(self, node_id: str, depth: int | None = None) -> dict[str, int]:
        self.node(node_id)
        return self.dag.upstream(node_id, depth)

    def downstream(self, node_id: str, depth: int | None = None) -> dict[str, int]:
        self.node(node_id)
        return self.dag.downstream(node_id, depth)

    def datasets(self) -> list[str]:
        return [n for n, node in self.nodes.items() if node.kind == "dataset"]

    def levels(self) -> list[list[str]]:
        """Execution levels of the datasets: each level's tables can run in parallel."""
        return self.dag.subgraph(self.datasets()).levels()

    def column_downstream(self, column: str, depth: int | None = None) -> dict[str, int]:
        return _walk_columns(column, self._col_down, "target", depth)

    def column_upstream(self, column: str, depth: int | None = None) -> dict[str, int]:
        return _walk_columns(column, self._col_up, "source", depth)

    def columns_in(self, table: str) -> list[ColumnEdge]:
        """Column edges that end in ``table``."""
        prefix = f"{table}."
        return [e for e in self.column_edges if e.target.startswith(prefix)]

    def split(self, sink_groups: Sequence[Sequence[str]]) -> list[SubPipeline]:
        """Non-overlapping sub-pipelines, one per sink group, each with its upstream datasets.

        A dataset needed by several groups goes to the first group that needs it, so every
        dataset is built once.
        """
        taken: set[str] = set()
        order = {n: i for i, n in enumerate(self.dag.subgraph(self.datasets()).topological_order())}
        result = []
        for sinks in sink_groups:
            closure = set(sinks)
            for sink in sinks:
                closure.update(self.upstream(sink))
            mine = [n for n in closure if n in order and n not in taken]
            taken.update(mine)
            result.append(SubPipeline(tuple(sinks), tuple(sorted(mine, key=order.__getitem__))))
        return result

    def pii_trace(self) -> list[PiiReach]:
        """Every column reached from a declared PII column, and whether it arrives unmasked."""
        reached: dict[str, tuple[set[str], bool, int]] = {}
        for node in self.nodes.values():
            for pii in node.pii_columns:
                origin = f"{node.id}.{pii}"
                for column, (exposed, depth) in self._trace(origin).items():
                    origins, was_exposed, best = reached.get(column, (set(), False, depth))
                    origins.add(origin)
                    reached[column] = (origins, was_exposed or exposed, min(best, depth))
        return [
            PiiReach(column, tuple(sorted(origins)), exposed, depth)
            for column, (origins, exposed, depth) in sorted(reached.items())
        ]

    def pii_in(self, table: str) -> frozenset[str]:
        """The columns of ``table`` that hold personal data in the clear: declared on it, or
        reached unmasked (``pii_trace``'s exposed) from a PII column declared upstream."""
        declared = self.nodes[table].pii_columns if table in self.nodes else ()
        return frozenset(declared) | self._exposed_pii.get(table, frozenset())

    @functools.cached_property
    def _exposed_pii(self) -> dict[str, frozenset[str]]:
        """Table -> its columns PII reaches unmasked: traced once per graph, not per step."""
        found: dict[str, set[str]] = {}
        for reach in self.pii_trace():
            if reach.exposed:
                layer, name, column = reach.column.split(".", 2)  # a table is layer.name
                found.setdefault(f"{layer}.{name}", set()).add(column)
        return {table: frozenset(columns) for table, columns in found.items()}

    def _trace(self, start: str) -> dict[str, tuple[bool, int]]:
        """Columns reached from ``start``; exposed when some path has no masking step."""
        best: dict[str, tuple[bool, int]] = {}
        queue = deque([(start, True, 0)])
        while queue:
            column, exposed, depth = queue.popleft()
            for edge in self._col_down.get(column, ()):
                carried = exposed and edge.transform != "masked"
                seen = best.get(edge.target)
                if seen is not None and (seen[0] or not carried):
                    continue  # nothing new: already reached at least as exposed
                shortest = depth + 1 if seen is None else min(seen[1], depth + 1)
                best[edge.target] = (carried, shortest)
                queue.append((edge.target, carried, depth + 1))
        return best


def _walk_columns(
    start: str, adjacency: Mapping[str, list[ColumnEdge]], field: str, depth: int | None
) -> dict[str, int]:
    seen = {start: 0}
    queue = deque([start])
    while queue:
        column = queue.popleft()
        if depth is not None and seen[column] >= depth:
            continue
        for edge in adjacency.get(column, ()):
            nxt = getattr(edge, field)
            if nxt not in seen:
                seen[nxt] = seen[column] + 1
                queue.append(nxt)
    del seen[start]
    return seen


def max_criticality(values: Iterable[str]) -> str | None:
    ranked = sorted(values, key=CRITICALITY_RANK.__getitem__)
    return ranked[-1] if ranked else None
