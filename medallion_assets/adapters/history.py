"""How long each table's step took in the project instance's past runs (``medallion
simulate``'s durations), read from Dagster's event log."""

from __future__ import annotations

import statistics
from pathlib import Path

import dagster as dg

from medallion_assets.adapters.translator import step_table

RUNS_READ = 30  # the newest runs; older ones describe other data volumes


def step_durations(home: Path, runs: int = RUNS_READ) -> dict[str, float]:
    """table -> the median seconds from its step's start to its success over the newest
    ``runs`` runs of the instance at ``home`` (a Dagster home); {} when there is none."""
    if not (home / "dagster.yaml").exists():
        return {}
    taken: dict[str, list[float]] = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs(limit=runs):
            started: dict[str, float] = {}
            for entry in instance.all_logs(run.run_id):
                event = entry.dagster_event
                if event is None or event.step_key is None:
                    continue
                if event.event_type == dg.DagsterEventType.STEP_START:
                    started[event.step_key] = entry.timestamp
                elif event.event_type == dg.DagsterEventType.STEP_SUCCESS:
                    began = started.get(event.step_key)
                    if began is not None:
                        table = step_table(event.step_key)
                        taken.setdefault(table, []).append(entry.timestamp - began)
    return {table: statistics.median(seconds) for table, seconds in taken.items()}
