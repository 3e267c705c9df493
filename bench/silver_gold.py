"""Benchmark G's sides that are not `medallion run`: silver and gold of a project, from a bronze
already in a medallion lake, as Spark Declarative Pipelines materialized views and as a plain
sequential PySpark script; and the content check of every side's outputs.

    python -m bench.silver_gold script PROJECT --lake LAKE --out DIR
    python -m bench.silver_gold check MANIFEST

``sdp_project(project, lake, folder)`` (called by the driver) writes an SDP project: a spec
(``spark-pipeline.yml``: storage, the run's Spark settings) and one SQL file per table under
``transformations/``: every bronze table a ``CREATE TEMPORARY VIEW`` over its current parquet
folders in the lake (all days), every silver and gold table a ``CREATE MATERIALIZED VIEW``
whose SQL is the project's own with table references rewritten to the flat names
(``silver.orders`` -> ``silver__orders``) by the runtime's SQL rewriter (pure SQL text). SDP
sees the whole graph and runs independent flows together; daily tables are one view over all
days. `spark-pipelines run` writes each view under ``spark-warehouse/`` of its working folder.
``materialized_views`` and ``sdp_spec`` serve ``bench.sdp_iceberg`` too (the same views, into
the lake's Iceberg catalog).

``script``: what a data engineer writes by hand, one table after another in the catalog's
order (daily tables day by day, as `medallion run` does), benchmark D's ``PlainPipeline.build``
per table (temp views, the SQL, write parquet, count; warehouse loads as the project declares);
writes ``outputs.json`` (table -> output folders) and ``runs.json`` (each build's table, day,
seconds and rows, timed inside the process: benchmark N's per-table figures).
``check``: for every side and table in the manifest, ``count(*)`` and
``sum(xxhash64(*))`` over its output folders, printed as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

STORAGE = "pipeline-storage"


def flat(name: str) -> str:
    return name.replace(".", "__")


def current_files(lake: Any, name: str, days: list[str] | None = None) -> list[str]:
    """The Parquet files of ``name``'s current version (of those days) in a medallion lake:
    an Iceberg snapshot's data files, which plain Spark reads as they are (no deletes)."""
    return list(lake.footprint(lake.current_versions(name, days)).paths)


def bronze_paths(lake_root: Path, catalog: Any) -> dict[str, dict[str, list[str]]]:
    """Bronze table -> {day or "": its current Parquet files} in a medallion lake."""
    from medallion_assets.lake import Lake

    lake = Lake.local(lake_root)
    found: dict[str, dict[str, list[str]]] = {}
    for name, dataset in catalog.datasets.items():
        if dataset.layer != "bronze":
            continue
        days = lake.partitions(name) if lake.is_partitioned(name) else [""]
        files = {day: current_files(lake, name, [day] if day else None) for day in days}
        if not any(files.values()):
            raise RuntimeError(f"{name} has no published version in the lake {lake_root}")
        found[name] = files
    return found


def sdp_project(project: Path, lake_root: Path, folder: Path, settings: dict[str, str]) -> Path:
    """Write the SDP project for the silver and gold of ``project``; the spec's path."""
    from medallion_assets.catalog import load_catalog

    catalog = load_catalog(project)
    transformations = folder / "transformations"
    transformations.mkdir(parents=True)
    for name, days in bronze_paths(lake_root, catalog).items():
        reads = " UNION ALL ".join(
            f"SELECT * FROM parquet.`{p}`" for files in days.values() for p in files
        )
        text = f"CREATE TEMPORARY VIEW {flat(name)} AS {reads}\n"
        (transformations / f"{flat(name)}.sql").write_text(text, encoding="utf-8")
    materialized_views(catalog, transformations)
    return sdp_spec(folder, "medallion_bench", settings)


def materialized_views(catalog: Any, transformations: Path) -> None:
    """One ``CREATE MATERIALIZED VIEW <flat name>`` file per silver/gold table of ``catalog``:
    the project's own SQL, its table references rewritten to the flat names."""
    from medallion_assets.lineage.spark_sql import spark_script

    for name, dataset in catalog.datasets.items():
        if dataset.layer == "bronze":
            continue
        views = {u: flat(u) for u in dataset.upstream}
        script = spark_script(dataset.sql, dataset.dialect, name, views)
        if script.preamble:
            raise RuntimeError(f"{name}: SQL with a preamble has no SDP port in this benchmark")
        text = f"CREATE MATERIALIZED VIEW {flat(name)} AS\n{script.query}\n"
        (transformations / f"{flat(name)}.sql").write_text(text, encoding="utf-8")


def sdp_spec(folder: Path, name: str, settings: dict[str, str], target: str = "") -> Path:
    """``folder/spark-pipeline.yml``: the pipeline's storage, Spark settings and SQL files;
    ``target``: spec lines naming its default catalog and database (none: the session's)."""
    storage = (folder / STORAGE).resolve()
    storage.mkdir()
    configuration = "".join(f"  {k}: '{v}'\n" for k, v in settings.items())
    spec = folder / "spark-pipeline.yml"
    spec.write_text(
        f"name: {name}\nstorage: file://{storage}\n{target}"
        f"configuration:\n{configuration}"
        "libraries:\n  - glob:\n      include: transformations/**\n",
        encoding="utf-8",
    )
    return spec


def sdp_outputs(folder: Path, catalog: Any) -> dict[str, list[str]]:
    """Where `spark-pipelines run` (working folder ``folder``) wrote each silver/gold view."""
    warehouse = folder / "spark-warehouse"
    return {
        name: [str(warehouse / flat(name))]
        for name, d in catalog.datasets.items()
        if d.layer != "bronze"
    }


def medallion_outputs(lake_root: Path, catalog: Any) -> dict[str, list[str]]:
    from medallion_assets.lake import Lake

    lake = Lake.local(lake_root)
    return {
        name: current_files(lake, name)
        for name, d in catalog.datasets.items()
        if d.layer != "bronze"
    }


def script(args: argparse.Namespace) -> int:
    """The plain sequential script over the lake's bronze; writes ``outputs.json``."""
    from bench.plain_pyspark import PlainPipeline
    from medallion_assets.catalog import load_catalog
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings

    spark = spark_session(MedallionSettings.from_env(os.environ))
    catalog = load_catalog(args.project)
    by_day = bronze_paths(args.lake, catalog)

    class FromBronze(PlainPipeline):
        def register_upstream(self, dataset: Any, day: str | None) -> dict[str, str]:
            views = {}
            for upstream in dataset.upstream:
                paths = by_day[upstream]
                chosen = (
                    paths[day]
                    if day is not None and day in paths
                    else [p for files in paths.values() for p in files]
                )
                self.spark.read.parquet(*chosen).createOrReplaceTempView(flat(upstream))
                views[upstream] = flat(upstream)
            return views

        def build(self, name: str, day: str | None) -> None:
            super().build(name, day)
            by_day.setdefault(name, {})[day or ""] = [self.written[name][-1]]

    pipeline = FromBronze(spark, catalog, args.s3 or args.out, args.out)
    days = sorted({d for paths in by_day.values() for d in paths if d})
    rest = [n for n, d in catalog.datasets.items() if d.layer != "bronze"]
    daily = [n for n in rest if catalog.datasets[n].settings.partitions is not None]
    first = time.perf_counter()
    for day in days:
        for name in daily:
            pipeline.build(name, day)
    for name in rest:
        if name not in daily:
            pipeline.build(name, None)
    # Benchmark G's start-up-left-out clock (bench/work_span.py).
    span = {"work_s": time.perf_counter() - first}
    (args.out / "span.json").write_text(json.dumps(span), encoding="utf-8")
    outputs = {n: list(paths) for n, paths in pipeline.written.items()}
    (args.out / "outputs.json").write_text(json.dumps(outputs), encoding="utf-8")
    # Each build's seconds (a daily table once per day), for benchmark N's per-table figures.
    runs = [asdict(run) for run in pipeline.runs]
    (args.out / "runs.json").write_text(json.dumps(runs), encoding="utf-8")
    spark.stop()
    return 0


def check(args: argparse.Namespace) -> int:
    """count(*) and sum(xxhash64(*)) of every (side, table) in the manifest."""
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings

    spark = spark_session(MedallionSettings.from_env(os.environ))
    manifest: dict[str, dict[str, list[str]]] = json.loads(args.manifest.read_text())
    sums: dict[str, dict[str, list[Any]]] = {}
    for side, tables in manifest.items():
        sums[side] = {}
        for table, paths in tables.items():
            if not paths:
                sums[side][table] = [None, "missing"]
                continue
            frame = spark.read.parquet(*paths)
            row = frame.selectExpr("count(*)", "sum(cast(xxhash64(*) as decimal(38, 0)))").first()
            assert row is not None  # an aggregate has one row
            sums[side][table] = [int(row[0]), str(row[1])]
    sys.stdout.write(json.dumps(sums) + "\n")
    spark.stop()
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.silver_gold")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("script")
    run.add_argument("project", type=Path)
    run.add_argument("--lake", type=Path, required=True)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--s3", type=Path)
    checking = commands.add_parser("check")
    checking.add_argument("manifest", type=Path)
    args = parser.parse_args(argv)
    if args.command == "script":
        args.out.mkdir(parents=True, exist_ok=True)
        return script(args)
    return check(args)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
