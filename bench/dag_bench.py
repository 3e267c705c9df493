"""Benchmark C: downstream / impact query latency on a synthetic 50,000-node lineage graph.

The graph (``synthetic.layered_dag``, seeded; ~3 parents per node) is built once; then, for
the same 200 randomly chosen (seeded) nodes, each call is timed on its own:

- ``DAG(nodes, edges).downstream(node)``                        bar: median < 5 ms
- ``impact(graph, node).summary()``                             bar: median < 5 ms
  (the impact answer: downstream tables by layer, exposures, criticality, owners)
- ``impact(graph, node).nodes``                                 full sorted listing
- ``impact(graph, node, column="c0").nodes``                    column-level impact

where ``graph`` is a ``LineageGraph`` over the same nodes and edges plus 1-2 column edges per
table edge. Reported: median, p95 and max latency, and the median number of nodes reached,
so the work per query is visible. gc is collected once before each series, not per call.
"""

from __future__ import annotations

import gc
import os
import random
import time
from collections.abc import Callable
from typing import Any

from bench import report
from bench.synthetic import column_edges, layered_dag
from bench.timing import median, percentile, timed

NODES = int(os.environ.get("BENCH_NODES", "50000"))
QUERIES = 200
BAR_MS = 5.0


def series(
    fn: Callable[[str], Any], sample: list[str], size: Callable[[Any], int]
) -> tuple[list[float], list[int]]:
    """Per-call seconds and result sizes of ``fn`` over ``sample``."""
    gc.collect()
    times, sizes = [], []
    for node in sample:
        start = time.perf_counter()
        result = fn(node)
        times.append(time.perf_counter() - start)
        sizes.append(size(result))
    return times, sizes


def main() -> float | None:
    from medallion_assets.lineage.dag import DAG

    print(
        report.heading(
            f"C. Downstream / impact latency on a {NODES:,}-node graph ({QUERIES} random nodes)"
        )
    )
    nodes, edges = layered_dag(NODES)
    build_s, dag = timed(lambda: DAG(nodes, edges))
    sample = random.Random(3).sample(nodes, QUERIES)
    dag.downstream(sample[0])  # warm-up
    rows = []
    times, sizes = series(dag.downstream, sample, len)
    rows.append(_row("DAG.downstream(node)", times, sizes))
    down_median_ms = median(times) * 1000

    graph = _lineage_graph(nodes, edges)
    if graph is not None:
        from medallion_assets.lineage.impact import impact

        _, lineage = graph
        impact(lineage, sample[0]).summary()  # warm-up
        # The answer to "what is impacted": totals by layer, exposures, criticality, owners.
        times, sizes = series(lambda n: impact(lineage, n).summary(), sample, lambda _: 0)
        sizes = [len(lineage.downstream(n)) for n in sample]
        rows.append(_row("impact(graph, node).summary()", times, sizes))
        impact_median_ms = median(times) * 1000
        # The full listing, every impacted node sorted by layer and depth (what the CLI prints).
        times, _ = series(lambda n: impact(lineage, n).nodes, sample, len)
        rows.append(_row("impact(graph, node).nodes", times, sizes))
        times, col_sizes = series(lambda n: impact(lineage, n, "c0").nodes, sample, len)
        rows.append(_row("impact(graph, node, 'c0').nodes", times, col_sizes))
    print(
        f"  graph: {len(nodes):,} nodes, {len(edges):,} edges; DAG() built in {build_s:.3f} s"
        + (f", LineageGraph() in {graph[0]:.3f} s" if graph else "")
    )
    print(report.table(["query", "calls", "median ms", "p95 ms", "max ms", "median reached"], rows))
    print()
    print(
        report.verdict(
            f"DAG.downstream median < {BAR_MS:g} ms",
            down_median_ms < BAR_MS,
            f"{down_median_ms:.3f} ms",
        )
    )
    if graph is None:
        print("  note: medallion_assets.lineage.impact / graph not importable; impact not timed")
    else:
        print(
            report.verdict(
                f"impact summary median < {BAR_MS:g} ms",
                impact_median_ms < BAR_MS,
                f"{impact_median_ms:.3f} ms",
            )
        )
    return down_median_ms


def _row(label: str, times: list[float], sizes: list[int]) -> list[object]:
    return [
        label,
        len(times),
        median(times) * 1000,
        percentile(times, 95) * 1000,
        max(times) * 1000,
        int(median(sizes)),
    ]


def _lineage_graph(nodes: list[str], edges: list[tuple[str, str]]) -> tuple[float, Any] | None:
    try:
        from medallion_assets.lineage.graph import ColumnEdge, LineageGraph, Node
    except ImportError:
        return None
    cols = ("c0", "c1", "c2")
    graph_nodes = [
        Node(n, "source" if n.startswith("raw.") else "dataset", n.split(".")[0], columns=cols)
        for n in nodes
    ]
    col_edges = [ColumnEdge(s, t, "direct") for s, t in column_edges(edges, len(cols))]
    return timed(lambda: LineageGraph(graph_nodes, edges, col_edges))


if __name__ == "__main__":
    main()
