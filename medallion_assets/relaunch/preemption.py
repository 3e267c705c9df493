"""Focus pre-emption: which running runs to terminate, and which queued runs to hold back, so a
run of higher priority gets the systems (Dagster pools) they would take. Pure: the sensor reads
the runs, this decides.

A run claims its systems only when the profile it was requested under has
``preempt_low_priority`` (focus), from the moment it is queued until it ends, not only while it
waits: focus gives critical work everything at the expense of the rest. It pre-empts a running
run only of strictly lower priority that holds one of the pools it needs, and never one it
pre-empted before (a re-queued run carries the runs that pre-empted its chain), so two runs
never take turns terminating each other. A queued run of strictly lower priority that needs one
of those pools is held in the queue until the claim ends (``holds``).

>>> critical = QueuedRun("c", 10, "focus", frozenset({"spark"}), preempts=True)
>>> report = RunningRun("r", 0, frozenset({"spark", "s3"}))
>>> [p.describe() for p in preemptions([critical], [report])]
['run c (priority 10, profile focus) needs spark, held by run r (priority 0)']
>>> preemptions([critical], [RunningRun("r2", 0, frozenset({"spark"}), frozenset({"c"}))])
[]
>>> started = QueuedRun("c", 10, "focus", frozenset({"spark"}), preempts=True, started=True)
>>> later = QueuedRun("l", 0, "focus", frozenset({"spark", "s3"}), preempts=True)
>>> {run: hold.describe() for run, hold in holds([started, later], [later]).items()}
{'l': 'held while run c (priority 10, profile focus) runs: it needs spark'}
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class QueuedRun:
    run_id: str
    priority: int
    profile: str
    pools: frozenset[str]  # the systems its tables run in
    preempts: bool  # its profile's preempt_low_priority
    started: bool = False  # in progress (its pools: the tables it has not finished), not queued
    held: bool = False  # queued and held back by a claim already (tagged medallion/held=yes)


@dataclass(frozen=True)
class RunningRun:
    run_id: str
    priority: int
    pools: frozenset[str]  # the systems of the tables it has not finished
    preempted_by: frozenset[str] = frozenset()  # runs that pre-empted its chain already


@dataclass(frozen=True)
class Preemption:
    victim: RunningRun
    by: QueuedRun
    pools: tuple[str, ...]  # the pools the queued run needs and the victim holds

    def describe(self) -> str:
        return (
            f"run {self.by.run_id} (priority {self.by.priority}, profile {self.by.profile}) "
            f"needs {', '.join(self.pools)}, held by run {self.victim.run_id} "
            f"(priority {self.victim.priority})"
        )


@dataclass(frozen=True)
class Hold:
    """A queued run kept in the queue while ``by`` claims ``pools`` it needs."""

    by: QueuedRun
    pools: tuple[str, ...]

    def describe(self) -> str:
        doing = "runs" if self.by.started else "waits"
        return (
            f"held while run {self.by.run_id} (priority {self.by.priority}, profile "
            f"{self.by.profile}) {doing}: it needs {', '.join(self.pools)}"
        )


def holds(claimants: Iterable[QueuedRun], queued: Iterable[QueuedRun]) -> dict[str, Hold]:
    """Queued run id -> the claim (of a queued or started run whose profile pre-empts) that
    holds it back: the highest-priority one of strictly higher priority sharing a pool."""
    ranked = sorted((c for c in claimants if c.preempts), key=lambda c: -c.priority)
    held: dict[str, Hold] = {}
    for waiting in queued:
        for claim in ranked:
            shared = tuple(sorted(claim.pools & waiting.pools))
            if claim.run_id != waiting.run_id and claim.priority > waiting.priority and shared:
                held[waiting.run_id] = Hold(claim, shared)
                break
    return held


def preemptions(queued: Iterable[QueuedRun], running: Iterable[RunningRun]) -> list[Preemption]:
    """The running runs to terminate, each once, for the runs that may pre-empt (queued or
    already started), highest priority first."""
    chosen: list[Preemption] = []
    taken: set[str] = set()
    candidates = list(running)
    for wanting in sorted(queued, key=lambda q: -q.priority):
        if not wanting.preempts:
            continue
        for holder in candidates:
            shared = tuple(sorted(wanting.pools & holder.pools))
            if (
                holder.run_id in taken
                or holder.priority >= wanting.priority
                or wanting.run_id in holder.preempted_by
                or not shared
            ):
                continue
            chosen.append(Preemption(holder, wanting, shared))
            taken.add(holder.run_id)
    return chosen
