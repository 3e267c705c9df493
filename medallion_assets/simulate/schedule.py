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
    from medallion_assets.simulate.scheduling import SchedulingPolicy


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
    """A table that was ready (its upstream done) but did not start, why, and when: spans of
    ticks (first, last), both included."""

    table: str
    reason: str
    spans: tuple[tuple[int, int], ...]

    @property
    def ticks(self) -> int:
        return sum(last - first + 1 for first, last in self.spans)

    def when(self) -> str:
        """``tick 3``, ``ticks 0-5`` or ``ticks 0-2, 7``."""
        parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in self.spans]
        return f"tick{'s' if self.ticks > 1 else ''} {', '.join(parts)}"


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

    def done_after(self, criticality: str | None = None) -> int:
        """Ticks until every step (of ``criticality``, when given) has ended; 0 if none runs."""
        ends = [s.at + 1 for s in self.starts if criticality in (None, s.criticality)]
        return max(ends, default=0)

    def as_dict(self) -> dict[str, object]:
        return {
            "max_workers": self.max_workers,
            "done_after": self.done_after(),
            "critical_done_after": self.done_after("critical"),
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
            "waits": [
                {"table": w.table, "reason": w.reason, "ticks": [list(span) for span in w.spans]}
                for w in self.waits
            ],
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
    wanted = set(selected)
    todo = [t for t in policy.tables if t in wanted and t not in skipped]
    waiting_on, children = _dependencies(policy, todo)
    ready = [t for t in todo if not waiting_on[t]]
    starts: list[Start] = []
    ticks: list[Tick] = []
    waits = _Waits()
    while ready:
        at = len(ticks)
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
        waits.note(policy, ready, load, at, f"all {max_workers} worker(s) busy")
        ticks.append(Tick(at, tuple(running), dict(load)))
        for table in running:
            for child in children[table]:
                waiting_on[child] -= 1
                if not waiting_on[child]:
                    ready.append(child)
    reserved = {s: policy.reserved(s) for s in policy.limits}
    return Schedule(
        max_workers,
        tuple(starts),
        tuple(ticks),
        waits.listed(),
        skipped,
        dict(policy.limits),
        {s: n for s, n in reserved.items() if n},
    )


def _dependencies(
    policy: SchedulingPolicy, todo: list[str]
) -> tuple[dict[str, int], dict[str, list[str]]]:
    """How many tables of the run each table waits for, and which wait for each. A skipped
    or unselected table is not waited for: its published version is read."""
    members = set(todo)
    waiting_on = {t: 0 for t in todo}
    children: dict[str, list[str]] = {t: [] for t in todo}
    for table in todo:
        for upstream in policy.upstream(table):
            if upstream in members:
                waiting_on[table] += 1
                children[upstream].append(table)
    return waiting_on, children


class _Waits:
    """The waits of a replay, each table's reason kept as spans of ticks (a long replay has
    a table wait many ticks: its spans stay few)."""

    def __init__(self) -> None:
        self._spans: dict[tuple[str, str], list[tuple[int, int]]] = {}

    def note(
        self,
        policy: SchedulingPolicy,
        ready: list[str],
        load: Mapping[str, int],
        at: int,
        busy: str,
    ) -> None:
        # Tables with the same caps wait for the same reason: ask the policy once per kind.
        reasons: dict[tuple[tuple[str, int], ...], str] = {}
        for table in ready:
            kind = policy.caps(table)
            if kind not in reasons:
                reasons[kind] = policy.blocker(table, load) or busy
            spans = self._spans.setdefault((table, reasons[kind]), [])
            if spans and spans[-1][1] == at - 1:
                spans[-1] = (spans[-1][0], at)
            else:
                spans.append((at, at))

    def listed(self) -> tuple[Wait, ...]:
        waits = [
            Wait(table, reason, tuple(spans)) for (table, reason), spans in self._spans.items()
        ]
        return tuple(sorted(waits, key=lambda w: (w.spans[0][0], w.table)))
