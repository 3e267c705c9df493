"""What a simulation found: when each table was first ready and along which route, each system's
peak concurrency against its limit, the exposures late against their deadline, the reroutes
taken."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from medallion_assets.catalog import Catalog


@dataclass(frozen=True)
class Outage:
    """``node`` (a table, ``source:``/``replica:``/``system:NAME``) down from ``at_s`` seconds
    after the window starts, to its end."""

    node: str
    at_s: float = 0.0


@dataclass(frozen=True)
class TableResult:
    table: str
    criticality: str
    pipeline: str
    start_s: float
    finish_s: float  # first ready in the window, seconds after its start
    route: str
    path: tuple[str, ...]  # the nodes the route needs, then the table
    state: str = "built"  # built | unreachable (left out: no available path)


@dataclass(frozen=True)
class SystemPeak:
    system: str
    peak: int
    limit: int | None


@dataclass(frozen=True)
class RerouteTaken:
    at_s: float
    table: str
    route: str
    around: tuple[str, ...]


@dataclass(frozen=True)
class LateExposure:
    exposure: str
    deadline_s: float  # seconds after the window starts
    ready_s: float | None  # when everything it reads was ready (None: not in the window)
    waiting_for: tuple[str, ...]  # its tables not ready by the deadline


@dataclass(frozen=True)
class Simulation:
    profile: str  # the profile forced on every pipeline, or "in force"
    start: datetime
    end: datetime
    runs: int
    datasets: tuple[TableResult, ...]
    systems: tuple[SystemPeak, ...]
    late_exposures: tuple[LateExposure, ...]
    reroutes: tuple[RerouteTaken, ...]
    preemptions: int = 0
    not_ready: tuple[str, ...] = ()  # tables no run in the window builds (or leaves out)
    makespan_s: float = 0.0  # when the last step ended
    builds: int = 0  # steps simulated (every run's tables, left-out ones included)

    def finish_of(self, table: str) -> float | None:
        return next((d.finish_s for d in self.datasets if d.table == table), None)

    def as_dict(self) -> dict[str, object]:
        return {
            "profile": self.profile,
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "runs": self.runs,
            "preemptions": self.preemptions,
            "datasets": [
                {
                    "table": d.table,
                    "criticality": d.criticality,
                    "pipeline": d.pipeline,
                    "start_s": d.start_s,
                    "finish_s": d.finish_s,
                    "route": d.route,
                    "path": list(d.path),
                    "state": d.state,
                }
                for d in self.datasets
            ],
            "systems": [
                {"system": s.system, "peak": s.peak, "limit": s.limit} for s in self.systems
            ],
            "late_exposures": [
                {
                    "exposure": e.exposure,
                    "deadline_s": e.deadline_s,
                    "ready_s": e.ready_s,
                    "waiting_for": list(e.waiting_for),
                }
                for e in self.late_exposures
            ],
            "reroutes": [
                {"at_s": r.at_s, "table": r.table, "route": r.route, "around": list(r.around)}
                for r in self.reroutes
            ],
            "not_ready": list(self.not_ready),
        }


def late_exposures(
    catalog: Catalog, first: Mapping[str, TableResult], start: datetime, end: datetime
) -> list[LateExposure]:
    """Exposures with a deadline whose tables were not all ready by its first occurrence in
    the window."""
    late = []
    midnight = start.replace(hour=0, minute=0, second=0, microsecond=0)
    for exposure in catalog.exposures.values():
        seconds = exposure.deadline_seconds
        if seconds is None:
            continue
        deadline = midnight + timedelta(seconds=seconds)
        if deadline < start:
            deadline += timedelta(days=1)
        if deadline >= end:
            continue
        due = (deadline - start).total_seconds()
        ready = {t: first[t].finish_s if t in first else None for t in exposure.depends_on}
        waiting = tuple(t for t, s in ready.items() if s is None or s > due)
        if waiting:
            known = [s for s in ready.values() if s is not None]
            ready_s = max(known) if len(known) == len(ready) else None
            late.append(LateExposure(exposure.name, due, ready_s, waiting))
    return late
