"""Benchmark H (skeleton): critical tables under contention, focus vs balanced.

    python -m bench H

Issue 14's second benchmark. The bars: with low-priority runs saturating the systems, the
critical tables' finish time under ``focus`` is <= 1.1x their time alone; under ``balanced``
the mean finish time over all tables is lower than under ``focus``.

The scenario (TheWorldShop, ``shop_data.prepare``, bronze built once off the clock as in G):

- ``alone``:    the ``core_daily`` pipeline (its sinks are the critical marts) runs by itself;
- ``focus``:    ``medallion control profile all focus``, the low-priority ``analytics``
                pipeline started ``LOAD_RUNS`` times first, then ``core_daily``;
- ``balanced``: the same load and runs under ``balanced``.

Finish times come from the Dagster event log of the project's instance (``finish_times``: each
asset's last ``STEP_SUCCESS``, in seconds after the first run of the scenario started), so every
scenario is measured the same way whatever runs it.

What it waits for (checked at start, reported as N/A until there): parallel steps
(`medallion run --max-workers`, the lead's item 1) and the run-level profile settings (priority
tags, the queued run coordinator, pre-emption: item 2), without which a scenario would measure
sequential runs that ignore the profile. Until then only ``finish_times`` is real.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench import report

LOAD_RUNS = 3
CRITICAL_PIPELINE, LOAD_PIPELINE = "core_daily", "analytics"
BIN = Path(sys.executable).parent


def finish_times(dagster_home: Path) -> dict[str, float]:
    """Asset key -> seconds from the first RUN_START in the instance to its last STEP_SUCCESS."""
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(dagster_home))
    try:
        records = instance.get_event_records(
            dg.EventRecordsFilter(event_type=dg.DagsterEventType.RUN_START), ascending=True
        )
        if not records:
            return {}
        origin = records[0].timestamp
        finished: dict[str, float] = {}
        for record in instance.get_event_records(
            dg.EventRecordsFilter(event_type=dg.DagsterEventType.STEP_SUCCESS), ascending=True
        ):
            step = record.event_log_entry.step_key or ""
            finished[step] = record.timestamp - origin
        return finished
    finally:
        instance.dispose()


def missing_features() -> list[str]:
    """What the scenarios need that `medallion` does not have yet."""
    done = subprocess.run(
        [str(BIN / "medallion"), "run", "--help"], capture_output=True, text=True, check=False
    )
    missing = []
    if "--max-workers" not in done.stdout:
        missing.append("`medallion run --max-workers` (parallel steps)")
    if "--pipeline" not in done.stdout:
        missing.append("running one pipeline's job with its profile's priority")
    return missing


def main() -> None:
    print(report.heading("H. Contention: critical tables under focus vs alone; balanced vs focus"))
    missing = missing_features()
    if missing:
        detail = "not measurable yet; needs " + "; ".join(missing)
        print(report.verdict("critical finish under focus with load <= 1.1x alone", None, detail))
        print(report.verdict("balanced mean finish < focus mean finish", None, detail))
        return
    # The features are there, the scenarios are not written yet: say so rather than guess.
    print(report.verdict("contention scenarios", None, "not written yet (see the docstring)"))


if __name__ == "__main__":
    main()
