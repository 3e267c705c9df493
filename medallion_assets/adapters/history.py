"""How long each table's step took in the project instance's past runs (``medallion
simulate``'s durations), read from Dagster's event log.

A step's time on the clock is more than its own run time: between its inputs being published
(or its run starting) and the step starting, Dagster launches it (an executor hand-off, its
resources, the step's own start events). That launch gap is measured too, from the same events,
so a simulated step ready at ``t`` ends at ``t + launch + duration`` as it does for real; and so
is a run's start-up, from leaving the queue to its first step (its process, its Spark).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from medallion_assets.adapters.translator import step_table
from medallion_assets.catalog import Catalog

RUNS_READ = 30  # the newest runs; older ones describe other data volumes


@dataclass(frozen=True)
class StepHistory:
    durations: dict[str, float] = field(default_factory=dict)  # table -> median start..success
    # The median seconds from a step's being ready (its run started, every input built in the
    # run succeeded, a worker was free) to its start; 0 with no past step.
    launch_s: float = 0.0
    runs: int = 0  # runs read
    # The median seconds from a run leaving the queue (launched, else started) to its first
    # step's start: the run worker's process and its Spark session starting.
    run_start_s: float = 0.0

    def with_launch(self) -> dict[str, float]:
        """table -> seconds from ready to built: its launch gap plus its duration."""
        return {table: self.launch_s + seconds for table, seconds in self.durations.items()}


def lineage_inputs(catalog: Catalog) -> Callable[[str], list[str]]:
    """``step_history``'s ``inputs`` from the catalog's lineage: the tables a table reads (none
    for a table dropped since its runs)."""

    def inputs(table: str) -> list[str]:
        return list(catalog.lineage.upstream(table, 1)) if table in catalog.datasets else []

    return inputs


def step_history(
    home: Path,
    inputs: Callable[[str], Iterable[str]] = lambda table: (),
    runs: int = RUNS_READ,
) -> StepHistory:
    """What the newest ``runs`` runs of the instance at ``home`` (a Dagster home) took: each
    table's median step duration (steps that kept their version left out), the launch gap and
    a run's start-up; ``inputs(table)`` are the tables a table reads (a step waits for those of
    them in its run). Empty with no instance."""
    if not (home / "dagster.yaml").exists():
        return StepHistory()
    taken: dict[str, list[float]] = {}
    gaps: list[float] = []
    start_ups: list[float] = []
    read = 0
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs(limit=runs):
            read += 1
            run_started: float | None = None
            launched: float | None = None
            started: dict[str, float] = {}
            succeeded: dict[str, float] = {}
            ended: list[float] = []  # any step's success or failure: a worker freed
            kept: set[str] = set()  # tables skipped as unchanged: their time is no build's
            for entry in instance.all_logs(run.run_id):
                event = entry.dagster_event
                if event is None:
                    continue
                if event.event_type == dg.DagsterEventType.RUN_START:
                    run_started = entry.timestamp
                elif event.event_type == dg.DagsterEventType.RUN_STARTING and launched is None:
                    launched = entry.timestamp
                if event.step_key is None:
                    continue
                table = step_table(event.step_key)
                if event.event_type == dg.DagsterEventType.STEP_START:
                    started[table] = entry.timestamp
                elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
                    if _skipped(event):
                        kept.add(table)
                elif event.event_type == dg.DagsterEventType.STEP_SUCCESS and table in started:
                    succeeded[table] = entry.timestamp
                    ended.append(entry.timestamp)
                    if table not in kept:
                        taken.setdefault(table, []).append(entry.timestamp - started[table])
                elif event.event_type == dg.DagsterEventType.STEP_FAILURE:
                    ended.append(entry.timestamp)
            if run_started is None:
                continue
            if started:
                start_ups.append(min(started.values()) - min(launched or run_started, run_started))
            for table, began in started.items():
                # Ready: the run started, every input built in the run succeeded, and (when
                # the step waited for a worker) the step before it ended. The gap after that
                # is the launch alone, not the wait the simulation models itself.
                ready = max(
                    [
                        run_started,
                        *(succeeded[t] for t in inputs(table) if t in succeeded),
                        *(t for t in ended if t <= began),
                    ]
                )
                if began >= ready:
                    gaps.append(began - ready)
    return StepHistory(
        {table: statistics.median(seconds) for table, seconds in taken.items()},
        statistics.median(gaps) if gaps else 0.0,
        read,
        statistics.median(start_ups) if start_ups else 0.0,
    )


def _skipped(event: dg.DagsterEvent) -> bool:
    """A materialization of a step that kept the current version (code and inputs unchanged,
    or no available path): ``skipped`` in its metadata."""
    value = event.step_materialization_data.materialization.metadata.get("skipped")
    return bool(getattr(value, "value", value))
