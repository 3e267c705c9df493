"""What stops a run the kill switch catches in flight, rule and mechanism in one place.

The rule: a run is stopped when it materializes a table disabled since the previous look
(``newly_disabled``), or belongs to a pipeline switched off since then; each run once, with the
entities it touched (``touched``). The mechanism goes through two small ports, each implemented
by the side that can do it:

- ``RunEnder``: the orchestrator ends the run (Dagster: a queued run cancelled, a started one
  terminated through its run launcher; ``adapters/kill_switch.py``);
- ``JobCanceller``: the engine cancels the jobs the run's steps started (Spark: the jobs
  tagged with the run, ``runtime/spark_session.SparkJobs``); the run's executor calls it
  while its steps wind down (``adapters/threads.py``).

Each stop is audited (``terminate``, with what it touched). The step-level check at the next
table boundary is the step guard's (``runtime/step_guard.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol


class RunEnder(Protocol):
    def end(self, run_id: str, message: str) -> str:
        """End the run; returns ``message`` with what did not work, if anything."""
        ...


class JobCanceller(Protocol):
    def cancel_run_jobs(self, run_id: str) -> None:
        """Cancel the jobs the run's steps started; never raises."""
        ...


# audit(kind, entity, message, run_id, details): the control store's record
Audit = Callable[[str, str, str, str, Mapping[str, Any]], None]


@dataclass(frozen=True)
class InFlight:
    """A queued or running run: the project's tables it materializes, its pipeline tag, and
    whether it is the project's (a code location may hold several projects)."""

    run_id: str
    tables: frozenset[str]
    pipeline: str | None
    owned: bool = True


@dataclass(frozen=True)
class Seen:
    """What the previous look found disabled (the sensor's cursor)."""

    tables: frozenset[str] = frozenset()
    pipelines: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, cursor: str | None) -> Seen:
        if not cursor:
            return cls()
        seen = json.loads(cursor)
        return cls(frozenset(seen["tables"]), frozenset(seen["pipelines"]))

    def cursor(self) -> str:
        return json.dumps({"tables": sorted(self.tables), "pipelines": sorted(self.pipelines)})


def newly_disabled(seen: Seen, now: Seen) -> Seen:
    """The tables and pipelines disabled now that were not at the previous look."""
    return Seen(now.tables - seen.tables, now.pipelines - seen.pipelines)


def touched(run: InFlight, new: Seen) -> list[str]:
    """The newly disabled tables the run materializes, and its pipeline when newly disabled.

    >>> run = InFlight("r", frozenset({"a", "b"}), "daily")
    >>> touched(run, Seen(frozenset({"b"}), frozenset({"daily"})))
    ['b', 'pipeline:daily']
    """
    found = sorted(run.tables & new.tables)
    if run.pipeline in new.pipelines and run.owned:
        found.append(f"pipeline:{run.pipeline}")
    return found


def stop_runs(runs: Iterable[InFlight], new: Seen, ender: RunEnder, audit: Audit) -> list[str]:
    """End every run that touches something newly disabled, each audited; the run ids."""
    stopped = []
    for run in runs:
        hit = touched(run, new)
        if not hit:
            continue
        message = ender.end(
            run.run_id, f"kill switch: run touches disabled {', '.join(hit)}; terminating it"
        )
        audit("terminate", "run", message, run.run_id, {"touched": hit})
        stopped.append(run.run_id)
    return stopped
