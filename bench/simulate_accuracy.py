"""Benchmark J: ``medallion simulate``'s prediction of a demo run against the real run.

    python -m bench J        (BENCH_J_ROWS=5000, BENCH_J_DAYS=3)

TheWorldShop (``shop_data.prepare``) is built twice from empty, each time by `medallion run` into
a home and a Dagster instance of its own: the first run is the past (its event log gives the
durations, as `medallion simulate` reads them from the project's instance), the second is the
run predicted. The prediction is ``simulate.simulate.simulate_runs`` over the second run's own
runs (each run's tables, all requested at once as `medallion run` requests them, under the
active profile, with the machine's workers), with each table's duration from the first run:

- ``simulate``:  what `medallion simulate` uses: each step's median time plus the launch gap,
                 and each run's start-up (process, Spark), both measured in the past run
- ``step only``: the step's time alone, no start-up (what it used before those were measured)
- ``as run``:    the same durations in `medallion run`'s own shape: one process start-up (the
                 past run's, from its first run's creation to its first step), the runs sharing
                 the workers, at most two runs at once (the rest, and a day at a time beside it)

`medallion run` starts its runs at once in one process (the days one after another beside the
rest), sharing one Spark and its workers, where `simulate` models scheduled runs: each its own
process and Spark and workers. ``simulate`` is therefore the prediction of those same runs
launched by a schedule; ``as run`` is the one to compare with this real run.

Per table: when it was first built, in seconds from the second run's first launch (real), and
predicted by each. Figures: the mean absolute error and the makespan ratio (predicted / real).
No bar in the issue: it asks that the prediction be compared with a real run, so the table is
the figure. Informational, like every benchmark.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import report
from bench.shop_data import prepare, run_env

ROWS = int(os.environ.get("BENCH_J_ROWS", "5000"))
DAYS = int(os.environ.get("BENCH_J_DAYS", "3"))
RUN_TIMEOUT_S = 900.0


def _medallion_run(project: Path, home: Path, s3_root: Path) -> float:
    env = run_env(home, s3_root) | {"DAGSTER_HOME": str(home / "dagster")}
    (home / "dagster").mkdir(parents=True)
    started = time.perf_counter()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "medallion"), "run", "--project", str(project)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=RUN_TIMEOUT_S,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"medallion run failed ({done.returncode}):\n{done.stdout[-3000:]}")
    print(f"  medallion run into {home.name}: {took:.1f} s; {done.stdout.strip().splitlines()[-1]}")
    return took


@dataclass(frozen=True)
class RealRun:
    runs: list[tuple[str, list[str]]]  # each run's label and the tables its steps built
    first: dict[str, float]  # table -> its first success, seconds from the first run's creation
    start_up: float  # seconds from the first run's creation to the first step's start


def real_runs(dagster_home: Path) -> RealRun:
    """What the `medallion run` recorded at ``dagster_home`` did, from its event log."""
    import dagster as dg

    from medallion_assets.adapters.translator import step_table

    with dg.DagsterInstance.from_config(str(dagster_home)) as instance:
        records = sorted(instance.get_run_records(), key=lambda r: r.create_timestamp)
        origin = records[0].create_timestamp.timestamp()
        runs: list[tuple[str, list[str]]] = []
        first: dict[str, float] = {}
        start_up = float("inf")
        for record in records:
            run = record.dagster_run
            tables: list[str] = []
            for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START):
                start_up = min(start_up, entry.timestamp - origin)
            for entry in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS):
                table = step_table(entry.step_key)
                tables.append(table)
                first[table] = min(first.get(table, float("inf")), entry.timestamp - origin)
            label = run.tags.get("dagster/partition", "main")
            runs.append((label, tables))
    return RealRun(runs, first, start_up)


def main() -> None:
    from medallion_assets.adapters.history import lineage_inputs, step_history
    from medallion_assets.catalog import load_catalog
    from medallion_assets.settings import MedallionSettings
    from medallion_assets.simulate.simulate import simulate_runs

    print(report.heading(f"J: simulate vs a real demo run ({ROWS:,} orders, {DAYS} days)"))
    with tempfile.TemporaryDirectory(prefix="bench-j-") as tmp_text:
        tmp = Path(tmp_text)
        data = prepare(tmp, rows=ROWS, days=DAYS)
        past, real = tmp / "past", tmp / "real"
        _medallion_run(data.project, past, data.s3_root)
        _medallion_run(data.project, real, data.s3_root)
        catalog = load_catalog(data.project, use_cache=False)
        history = step_history(past / "dagster", lineage_inputs(catalog))
        before = real_runs(past / "dagster")
        now = real_runs(real / "dagster")
        runs, finished = now.runs, now.first
        data_project = data.project
    workers = MedallionSettings.from_env(dict(os.environ), data_project).workers
    known = [(label, [t for t in tables if t in catalog.datasets]) for label, tables in runs]
    with_launch = history.with_launch()
    predicted = {
        "simulate": simulate_runs(
            catalog, with_launch, known, max_workers=workers, run_start_s=history.run_start_s
        ),
        "step only": simulate_runs(catalog, dict(history.durations), known, max_workers=workers),
        # `medallion run`'s shape: one process start-up (the past run's), its workers shared
        # by the runs, the days one at a time beside the rest
        "as run": simulate_runs(
            catalog,
            with_launch,
            known,
            max_workers=workers,
            max_runs=2,
            run_start_s=0.0,
            shared_workers=True,
        ),
    }
    sides = list(predicted)
    offset = {"as run": before.start_up}
    tables = sorted(finished, key=lambda t: finished[t])
    rows = []
    for table in tables:
        guesses = [_at(predicted[side].finish_of(table), offset.get(side, 0.0)) for side in sides]
        rows.append([table, finished[table], *guesses])
    print(
        f"  measured in the past run: launch gap {history.launch_s:.2f} s, run start-up "
        f"{history.run_start_s:.1f} s (median), process start-up {before.start_up:.1f} s; "
        f"workers {workers}; runs {len(runs)}"
    )
    print(report.table(["table", "real s", *(f"{s} s" for s in sides)], rows))
    real_end = max(finished.values())
    for side in sides:
        shift = offset.get(side, 0.0)
        errors = [
            abs(guess + shift - finished[t])
            for t in tables
            if (guess := predicted[side].finish_of(t)) is not None
        ]
        mae = statistics.mean(errors) if errors else float("nan")
        makespan = predicted[side].makespan_s + shift
        print(
            f"  {side}: mean absolute error {mae:.1f} s over {len(errors)} tables; "
            f"makespan {makespan:.1f} s predicted / {real_end:.1f} s real "
            f"= {makespan / real_end if real_end else float('nan'):.2f}"
        )


def _at(seconds: float | None, shift: float) -> float | None:
    return None if seconds is None else seconds + shift


if __name__ == "__main__":
    main()
