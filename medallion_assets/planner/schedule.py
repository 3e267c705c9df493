"""A run replayed under a scheduling policy, every step one tick long: what ``medallion plan``
shows of a profile (the start order, each system's concurrency over time, what waits and what
is skipped).

Real steps differ in length; unit durations keep the replay a pure function of the catalog and
the profile, and still show the order, the spread over systems and every wait the policy
causes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from medallion_assets.planner.scheduling import SchedulingPolicy


@dataclass(frozen=True)
class Start:
    """One step of the replay: it runs from tick ``at`` to ``at + 1``."""

    table: str
    at: int
    criticality: str
    systems: tuple[str, ...]


@dataclass(frozen=True)
class Tick:
    """What runs during one tick, and how many steps each system holds."""

    at: int
    running: tuple[str, ...]
    per_system: Mapping[str, int]


@dataclass(frozen=True)
class Wait:
    """A table that was ready (its upstream done) at tick ``at`` but did not start, and why."""

    table: str
    at: int
    reason: str


@dataclass(frozen=True)
class Schedule:
    max_workers: int
    starts: tuple[Start, ...]  # in start order
    ticks: tuple[Tick, ...]
    waits: tuple[Wait, ...]
    skipped: Mapping[str, str]  # table -> why the profile leaves it out
    limits: Mapping[str, int]
    reserved: Mapping[str, int]  # system -> slots only critical work may take

    @property
    def order(self) -> tuple[str, ...]:
        return tuple(s.table for s in self.starts)

    @property
    def systems(self) -> tuple[str, ...]:
        """Every system a step of the replay held, limited ones first."""
        used = {s for start in self.starts for s in start.systems}
        return tuple(sorted(used, key=lambda s: (s not in self.limits, s)))

    def peak(self, system: str) -> int:
        return max((t.per_system.get(system, 0) for t in self.ticks), default=0)

    def start_of(self, table: str) -> int:
        for start in self.starts:
            if start.table == table:
                return start.at
        raise KeyError(f"{table!r} does not start in this schedule")

    def as_dict(self) -> dict[str, object]:
        return {
            "max_workers": self.max_workers,
            "unit_durations": True,
            "starts": [
                {
                    "table": s.table,
                    "at": s.at,
                    "criticality": s.criticality,
                    "systems": list(s.systems),
                }
                for s in self.starts
            ],
            "systems": {
                system: {
                    "limit": self.limits.get(system),
                    "reserved_for_critical": self.reserved.get(system, 0),
                    "peak": self.peak(system),
                    "per_tick": [t.per_system.get(system, 0) for t in self.ticks],
                }
                for system in self.systems
            },
            "waits": [{"table": w.table, "at": w.at, "reason": w.reason} for w in self.waits],
            "skipped": dict(self.skipped),
        }


def simulate(policy: SchedulingPolicy, selected: Collection[str], max_workers: int) -> Schedule:
    """Replay a run of ``selected`` under ``policy`` with ``max_workers`` workers: at every
    tick the steps of the last tick are done, and free workers take what ``policy.pick``
    chooses among the ready steps until it chooses none."""
    if max_workers < 1:
        raise ValueError(f"max_workers is {max_workers}: give at least 1 worker")
    for table in sorted(set(selected) - set(policy.tables)):
        raise KeyError(f"unknown table {table!r}")
    skipped = policy.skipped(selected)
    todo = [t for t in policy.tables if t in set(selected) and t not in skipped]
    waits_for = {t: [u for u in policy.upstream(t) if u in todo] for t in todo}
    done: set[str] = set()
    starts: list[Start] = []
    ticks: list[Tick] = []
    waits: list[Wait] = []
    at = 0
    while len(done) < len(todo):
        started = {s.table for s in starts}
        ready = [t for t in todo if t not in started and all(u in done for u in waits_for[t])]
        load: dict[str, int] = {}
        running: list[str] = []
        while len(running) < max_workers:
            choice = policy.pick(ready, load)
            if choice is None:
                break
            ready.remove(choice)
            running.append(choice)
            for system in policy.systems(choice):
                load[system] = load.get(system, 0) + 1
            traits = policy.tables[choice]
            starts.append(Start(choice, at, traits.criticality, traits.systems))
        if not running:  # cannot happen: an idle system always has a slot for anyone
            raise RuntimeError(f"no step can start at tick {at}: {', '.join(ready)}")
        for table in ready:
            reason = policy.blocker(table, load) or f"all {max_workers} worker(s) busy"
            waits.append(Wait(table, at, reason))
        ticks.append(Tick(at, tuple(running), dict(load)))
        done.update(running)
        at += 1
    reserved = {s: policy.reserved(s) for s in policy.limits}
    return Schedule(
        max_workers,
        tuple(starts),
        tuple(ticks),
        tuple(waits),
        skipped,
        dict(policy.limits),
        {s: n for s, n in reserved.items() if n},
    )
