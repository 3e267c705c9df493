"""Benchmark B: build the project graph of a synthetic 5,000-table project with ``load_catalog``.

The project (``synthetic.write_project``) is written to a temp folder. Measured in this
process, after a warm-up ``load_catalog`` of a small separate synthetic project (imports and
first-call set-up excluded), gc collected before each call:

- cold: ``load_catalog(path, use_cache=False)``: YAML + validation + parse + lineage of every file
- warm: ``load_catalog(path)`` after one untimed call filled ``<path>/.medallion/cache``
- of which metadata: ``load_metadata(path)`` alone (reading and validating metadata/*.yaml),
  to show how much of a warm load is YAML rather than SQL

No bar is set for B; the numbers are reported.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench import report
from bench.synthetic import write_project
from bench.timing import median, repeat, timed

TABLES = int(os.environ.get("BENCH_TABLES", "5000"))
REPS_COLD, REPS_WARM = 3, 5


def main() -> None:
    from medallion_assets.catalog import load_catalog

    print(report.heading(f"B. load_catalog on a synthetic {TABLES:,}-table project"))
    with tempfile.TemporaryDirectory(prefix="medallion-bench-b-") as tmp:
        warmup, project = Path(tmp, "warmup"), Path(tmp, "project")
        write_project(warmup, tables=40, seed=1)
        load_catalog(warmup, use_cache=False)
        counts = write_project(project, tables=TABLES)
        print("  project: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()))

        _, catalog = timed(lambda: load_catalog(project, use_cache=False))  # sanity, untimed
        graph = catalog.lineage
        cold = repeat(lambda: load_catalog(project, use_cache=False), REPS_COLD)
        load_catalog(project)  # fills the cache
        warm = repeat(lambda: load_catalog(project), REPS_WARM)
        rows = [
            ["cold (use_cache=False)", len(cold), median(cold), min(cold), TABLES / median(cold)],
            ["warm (cache filled)", len(warm), median(warm), min(warm), TABLES / median(warm)],
        ]
        metadata = _metadata_only(project)
        if metadata:
            rows.append(
                ["  of which metadata/*.yaml", len(metadata), median(metadata), min(metadata), None]
            )
    print(report.table(["load_catalog", "reps", "median s", "min s", "tables/s"], rows))
    print(
        f"  graph: {len(catalog.datasets):,} datasets, {len(graph.nodes):,} nodes, "
        f"{len(graph.dag.edges()):,} table edges, {len(graph.column_edges):,} column edges, "
        f"{len(graph.levels())} levels"
    )


def _metadata_only(project: Path) -> list[float]:
    try:
        from medallion_assets.catalog.metadata_files import load_metadata
    except ImportError:
        return []
    return repeat(lambda: load_metadata(project), REPS_WARM)


if __name__ == "__main__":
    main()
