"""Benchmark F's worker: build tables with and without their checks, in this (fresh) process.

    python -m bench.validation_worker PROJECT ROOT [--reps R] [--kinds-rows N]

Two tables, each timed with ``runtime.table_build.build_table`` (the work a Dagster step does for a
silver table: register the inputs, run the SQL, stage, count, validate, publish), once with
``checks=False`` and once with ``checks=True`` per repetition, alternating which goes first:

- ``silver.user_events`` of TheWorldShop (``PROJECT``, raw data from ``medallion demo-data``
  under ``MEDALLION_S3_LOCAL_ROOT``), with the checks its metadata declares. Its bronze input
  is materialized first, off the clock, through the project's own Dagster job.
- ``silver.orders`` of the synthetic project in ``bench.validation_project`` under ``ROOT``:
  one rule of every kind a staged table can carry, for the cost of each kind.

Before the clock: imports, the Spark session (``MedallionSettings.from_env``, as a run gets it),
the inputs, and one untimed build of each kind (JIT and file caches warm alike). Before every
timed build the table's folder is removed, so nothing is reused. Each checked build reports
the seconds every check took (``CheckResult.seconds``). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

DEMO_TABLE = "silver.user_events"


def time_builds(
    spark: Any, lake: Any, catalog: Any, table: str, partition: str | None, reps: int
) -> dict[str, Any]:
    from medallion_assets.lake.tables import identifier
    from medallion_assets.runtime.table_build import build_table
    from medallion_assets.runtime.table_run import TableRun

    dataset = catalog.datasets[table]

    def build(checks: bool) -> dict[str, Any]:
        lake.attach(spark)  # every rep builds the table from nothing
        spark.sql(f"DROP TABLE IF EXISTS {identifier(table)} PURGE")
        started = time.perf_counter()
        run = TableRun(
            spark=spark,
            lake=lake,
            catalog=catalog,
            dataset=dataset,
            partition=partition,
            checks=checks,
        )
        outcome = build_table(run)
        seconds = time.perf_counter() - started
        results = outcome.validation.results
        return {
            "seconds": seconds,
            "rows": outcome.version.rows,
            "checks": {
                r.name: {"kind": r.kind, "seconds": r.seconds, "passed": r.passed} for r in results
            },
        }

    build(False), build(True)  # warm-up, untimed
    runs: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
    for rep in range(reps):
        for checks in (False, True) if rep % 2 == 0 else (True, False):
            runs["with" if checks else "without"].append(build(checks))
    rules = [r.label() for r in dataset.rules if r.kind != "reconciliation"]
    return {"table": table, "partition": partition, "rules": rules, "runs": runs}


def materialize_bronze(project: Path, table: str) -> str:
    """Ingest ``table`` (daily) for the first raw day through the project's Dagster job."""
    import dagster as dg

    from medallion_assets.adapters.code_location import definitions_for
    from medallion_assets.adapters.headless import raw_partitions
    from medallion_assets.adapters.translator import DatasetTranslator, table_key
    from medallion_assets.catalog import load_catalog

    catalog = load_catalog(project)
    defs = definitions_for(catalog, DatasetTranslator(catalog))
    day = raw_partitions(catalog, defs)[0]
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        asset_selection=[table_key(table)],
        partition_key=day,
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=True,
    )
    assert result.success
    return day


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.validation_worker")
    parser.add_argument("project", type=Path)
    parser.add_argument("root", type=Path)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--kinds-rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)

    from bench.validation_project import TABLE, publish_inputs, write_project
    from medallion_assets.catalog import load_catalog
    from medallion_assets.lake import Lake
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings

    settings = MedallionSettings.from_env(os.environ, args.project)
    spark = spark_session(settings)

    upstream = next(iter(load_catalog(args.project).datasets[DEMO_TABLE].upstream))
    day = materialize_bronze(args.project, upstream)
    catalog = load_catalog(args.project)
    lake = Lake.of(settings)
    demo = time_builds(spark, lake, catalog, DEMO_TABLE, day, args.reps)

    kinds_project = write_project(args.root / "kinds-project")
    kinds_catalog = load_catalog(kinds_project)
    kinds_lake = Lake.local(args.root / "kinds-lake")
    publish_inputs(spark, kinds_lake, kinds_catalog, args.kinds_rows)
    kinds = time_builds(spark, kinds_lake, kinds_catalog, TABLE, None, args.reps)

    sys.stdout.write(json.dumps({"demo": demo, "kinds": kinds}) + "\n")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
