"""Benchmark D's Dagster side: ``run_project`` on a fresh lake, in this (fresh) process.

    python -m bench.dagster_run PROJECT

The environment (``MEDALLION_HOME``, ``MEDALLION_S3_LOCAL_ROOT``) is the caller's. Before the
clock starts: imports, and the Spark session (``runtime.spark.spark_session`` with
``MedallionSettings.from_env``, exactly what ``SparkResource.session()`` uses, so the run's
resource gets this session back from ``getOrCreate``). Timed: one
``run_project(project, instance=DagsterInstance.ephemeral())``, which loads the catalog, builds
the ``Definitions``, lists the daily partitions in S3, then executes one run per day and one
for the rest.

Where the time goes is measured by wrapping functions in place (timing only, no behaviour
change): ``load_catalog`` and ``definitions_for`` as ``run_project`` calls them, its
``raw_partitions`` S3 listing, each ``job.execute_in_process`` (``_execute``), and the asset
body ``factory.materialize_dataset`` per table and partition. The Dagster event log of each run
gives step durations (``STEP_SUCCESS.duration_ms``) and run start/end. Token-bucket waits
(``TokenBucket.acquire``) and S3 list/download time inside the asset bodies are summed, to tell
the runtime's own costs from the work Spark does, and so is the time inside Py4J calls
(``bench.jvm_clock``), per asset body and for the whole run. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Measured inside each asset body as well as in total (raw_partitions lists S3 outside them).
INSIDE_ASSETS = ("s3_list", "s3_download", "throttle_wait")


class Stopwatch:
    """Accumulates wall time of wrapped callables under a label."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        original = getattr(owner, attr)

        @functools.wraps(original)
        def timed_call(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - started
                self.calls[label] += 1

        setattr(owner, attr, timed_call)


def instrument(
    watch: Stopwatch, assets: list[dict[str, Any]], jvm_clock: Callable[[], float]
) -> None:
    from medallion_assets.adapters import assets as factory
    from medallion_assets.adapters import headless
    from medallion_assets.throttles import throttle

    watch.wrap(headless, "load_catalog", "load_catalog")
    watch.wrap(headless, "definitions_for", "definitions_for")
    watch.wrap(headless, "raw_partitions", "raw_partitions")
    watch.wrap(headless, "_execute", "execute_in_process")
    watch.wrap(throttle.ThrottledS3, "list", "s3_list")
    watch.wrap(throttle.ThrottledS3, "download", "s3_download")

    acquire = throttle.TokenBucket.acquire

    def counted_acquire(self: Any, amount: float = 1.0) -> float:
        waited = acquire(self, amount)
        watch.seconds["throttle_wait"] += waited
        return waited

    throttle.TokenBucket.acquire = counted_acquire  # type: ignore[method-assign]

    materialize = factory.materialize_dataset

    def timed_materialize(context: Any, runner: Any, run: Any) -> Any:
        # The asset body is a generator (it yields check results, then the materialization):
        # time the iteration, not the call that only creates it.
        before = {k: watch.seconds[k] for k in INSIDE_ASSETS}
        started, jvm_started = time.perf_counter(), jvm_clock()
        try:
            yield from materialize(context, runner, run)
        finally:
            partition = context.partition_key if context.has_partition_key else None
            asset = {
                "table": run.dataset.name,
                "partition": partition,
                "seconds": time.perf_counter() - started,
                "jvm": jvm_clock() - jvm_started,
            }
            asset.update({k: watch.seconds[k] - before[k] for k in INSIDE_ASSETS})
            assets.append(asset)

    factory.materialize_dataset = timed_materialize


def event_log(instance: Any, run_ids: list[str]) -> dict[str, Any]:
    """Step durations and run wall times from the instance's event log."""
    from dagster import DagsterEventType

    steps, runs = 0.0, 0.0
    step_count = 0
    for run_id in run_ids:
        start = end = None
        for entry in instance.all_logs(run_id):
            event = entry.dagster_event
            if event is None:
                continue
            kind = event.event_type
            if kind == DagsterEventType.STEP_SUCCESS:
                steps += event.event_specific_data.duration_ms / 1000
                step_count += 1
            elif kind == DagsterEventType.RUN_START:
                start = entry.timestamp
            elif kind in (DagsterEventType.RUN_SUCCESS, DagsterEventType.RUN_FAILURE):
                end = entry.timestamp
        if start is not None and end is not None:
            runs += end - start
    return {"step_seconds": steps, "steps": step_count, "run_event_seconds": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dagster_run")
    parser.add_argument("project", type=Path)
    args = parser.parse_args(argv)

    import_started = time.perf_counter()
    import os

    import dagster as dg

    from bench.jvm_clock import install as install_jvm_clock
    from medallion_assets.adapters.headless import run_project
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings

    imports = time.perf_counter() - import_started
    started = time.perf_counter()
    spark = spark_session(MedallionSettings.from_env(os.environ))
    session_seconds = time.perf_counter() - started

    watch, assets = Stopwatch(), []
    clock = install_jvm_clock()
    instrument(watch, assets, clock)
    instance = dg.DagsterInstance.ephemeral()
    log: Callable[[str], None] = lambda _m: None  # noqa: E731
    started = time.perf_counter()
    summary = run_project(args.project, log=log, instance=instance)
    seconds = time.perf_counter() - started

    rows = {(r.table, r.partition): r for r in summary.results}
    for asset in assets:
        result = rows.get((asset["table"], asset["partition"]))
        asset["rows"] = result.rows if result else None
        asset["quarantined"] = result.quarantined if result else None
        asset["warehouse_rows"] = result.warehouse_rows if result else None
        asset["skipped"] = result.skipped if result else None
    out = {
        "side": "dagster",
        "seconds": seconds,
        "jvm_seconds": clock(),
        "success": summary.success,
        "runs": len(summary.run_ids),
        "import_seconds": imports,
        "session_seconds": session_seconds,
        "watch": dict(watch.seconds),
        "calls": dict(watch.calls),
        "tables": assets,
        **event_log(instance, summary.run_ids),
    }
    sys.stdout.write(json.dumps(out) + "\n")
    instance.dispose()
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
