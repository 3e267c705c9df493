"""Render a slice of lineage as a tree, JSON, Mermaid or Graphviz DOT.

A ``LineageView`` is the slice: a root, the nodes around it with their depth, the edges among
them and, when asked, the column edges into those nodes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from medallion_assets.lineage.graph import ColumnEdge, LineageGraph, Node


@dataclass(frozen=True)
class LineageView:
    root: str | None
    direction: str  # upstream | downstream | both | all
    nodes: tuple[Node, ...]
    depths: dict[str, int]
    edges: tuple[tuple[str, str], ...]
    column_edges: tuple[ColumnEdge, ...] | None  # None: columns not asked for
    unresolved: tuple[dict[str, str], ...] = ()


def view(
    graph: LineageGraph,
    root: str,
    direction: str = "both",
    depth: int | None = None,
    columns: bool = False,
) -> LineageView:
    graph.node(root)
    depths: dict[str, int] = {root: 0}
    if direction in ("upstream", "both"):
        depths.update({n: -d for n, d in graph.upstream(root, depth).items()})
    if direction in ("downstream", "both"):
        depths.update(graph.downstream(root, depth))
    keep = set(depths)
    edges = tuple((u, d) for u, d in graph.dag.edges() if u in keep and d in keep)
    column_edges = None
    if columns:
        column_edges = tuple(
            e
            for e in graph.column_edges
            if e.target.rsplit(".", 1)[0] in keep and e.source.rsplit(".", 1)[0] in keep
        )
    nodes = tuple(graph.nodes[n] for n in sorted(keep, key=lambda n: (depths[n], n)))
    return LineageView(root, direction, nodes, depths, edges, column_edges)


# --- tree --------------------------------------------------------------------------------------


def _label(node: Node) -> str:
    tags = [node.layer]
    if node.kind == "dataset" or node.kind == "exposure":
        tags.append(node.criticality)
    if node.pii_columns:
        tags.append("pii")
    return f"{node.id}  [{', '.join(tags)}]"


def render_tree(v: LineageView) -> str:
    by_id = {n.id: n for n in v.nodes}
    parents: dict[str, list[str]] = {}
    children: dict[str, list[str]] = {}
    for u, d in v.edges:
        children.setdefault(u, []).append(d)
        parents.setdefault(d, []).append(u)
    roots = [v.root] if v.root else _roots(v, parents, children)
    lines: list[str] = []
    for root in roots:
        lines.append(_label(by_id[root]))
        _columns(v, root, "    ", lines)
        if v.direction in ("upstream", "both"):
            lines.append("  upstream:" if v.direction == "both" else "")
            _branch(root, parents, by_id, v, "  ", lines, {root})
        if v.direction in ("downstream", "both", "all"):
            lines.append("  downstream:" if v.direction == "both" else "")
            _branch(root, children, by_id, v, "  ", lines, {root})
    return "\n".join(line for line in lines if line) + "\n"


def _roots(
    v: LineageView, parents: dict[str, list[str]], children: dict[str, list[str]]
) -> list[str]:
    """Nodes nothing feeds, then one node of each cycle no such node reaches (else a folder
    whose tables all read one another would print nothing)."""
    roots: list[str] = []
    reached: set[str] = set()
    starts = [n.id for n in v.nodes if n.id not in parents] + [n.id for n in v.nodes]
    for start in starts:
        if start in reached:
            continue
        roots.append(start)
        pending = [start]
        while pending:
            current = pending.pop()
            if current not in reached:
                reached.add(current)
                pending.extend(children.get(current, []))
    return roots


def _branch(
    node: str,
    adjacency: dict[str, list[str]],
    by_id: dict[str, Node],
    v: LineageView,
    indent: str,
    lines: list[str],
    path: set[str],
) -> None:
    nexts = sorted(n for n in adjacency.get(node, []) if n in by_id)
    for i, nxt in enumerate(nexts):
        last = i == len(nexts) - 1
        lines.append(f"{indent}{'└── ' if last else '├── '}{_label(by_id[nxt])}")
        child_indent = indent + ("    " if last else "│   ")
        _columns(v, nxt, child_indent + "    ", lines)
        if nxt not in path:
            _branch(nxt, adjacency, by_id, v, child_indent, lines, path | {nxt})


def _columns(v: LineageView, table: str, indent: str, lines: list[str]) -> None:
    if v.column_edges is None:
        return
    sources: dict[str, list[str]] = {}
    transforms: dict[str, str] = {}
    for edge in v.column_edges:
        owner, column = edge.target.rsplit(".", 1)
        if owner == table:
            sources.setdefault(column, []).append(edge.source)
            transforms[column] = edge.transform
    node = next((n for n in v.nodes if n.id == table), None)
    for column in node.columns if node else ():
        if column in sources:
            lines.append(
                f"{indent}· {column} <- {', '.join(sorted(sources[column]))} ({transforms[column]})"
            )
    for item in v.unresolved:
        if item["column"].rsplit(".", 1)[0] == table:
            lines.append(
                f"{indent}· {item['column'].rsplit('.', 1)[1]} <- UNRESOLVED: {item['reason']}"
            )


# --- json, mermaid, dot --------------------------------------------------------------------------


def render_json(v: LineageView) -> str:
    data: dict[str, Any] = {
        "root": v.root,
        "direction": v.direction,
        "nodes": [
            {
                "id": n.id,
                "kind": n.kind,
                "layer": n.layer,
                "criticality": n.criticality,
                "owners": list(n.owners),
                "depth": v.depths.get(n.id, 0),
                "file": n.file,
            }
            for n in v.nodes
        ],
        "edges": [{"from": u, "to": d} for u, d in v.edges],
    }
    if v.column_edges is not None:
        data["column_edges"] = [
            {"from": e.source, "to": e.target, "transform": e.transform} for e in v.column_edges
        ]
        data["unresolved"] = list(v.unresolved)
    return json.dumps(data, indent=2) + "\n"


def _mermaid_id(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", node_id)


def render_mermaid(v: LineageView) -> str:
    lines = ["graph LR"]
    for node in v.nodes:
        lines.append(f'  {_mermaid_id(node.id)}["{node.id}"]:::{node.layer}')
    for u, d in v.edges:
        lines.append(f"  {_mermaid_id(u)} --> {_mermaid_id(d)}")
    styles = {
        "raw": "#eeeeee",
        "bronze": "#e8c39e",
        "silver": "#d9d9d9",
        "gold": "#f5d76e",
        "exposure": "#b3d9ff",
    }
    for layer, color in styles.items():
        lines.append(f"  classDef {layer} fill:{color},stroke:#555")
    return "\n".join(lines) + "\n"


def render_dot(v: LineageView) -> str:
    lines = ["digraph lineage {", "  rankdir=LR;", "  node [shape=box, style=rounded];"]
    for node in v.nodes:
        extra = ", penwidth=2" if node.criticality == "critical" else ""
        lines.append(f'  "{node.id}" [label="{node.id}\\n{node.layer}"{extra}];')
    for u, d in v.edges:
        lines.append(f'  "{u}" -> "{d}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


RENDERERS = {"tree": render_tree, "json": render_json, "mermaid": render_mermaid, "dot": render_dot}
