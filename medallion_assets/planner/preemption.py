"""Focus pre-emption: which running runs to terminate so a queued run of higher priority gets
the systems (Dagster pools) they hold. Pure: the sensor reads the runs, this decides.

A queued run pre-empts only when the profile it was requested under has
``preempt_low_priority``; it pre-empts a running run only of strictly lower priority that holds
one of the pools it needs, and never one it pre-empted before (a re-queued run carries the runs
that pre-empted its chain), so two runs never take turns terminating each other.

>>> critical = QueuedRun("c", 10, "focus", frozenset({"spark"}), preempts=True)
>>> report = RunningRun("r", 0, frozenset({"spark", "s3"}))
>>> [p.describe() for p in preemptions([critical], [report])]
['run c (priority 10, profile focus) needs spark, held by run r (priority 0)']
>>> preemptions([critical], [RunningRun("r2", 0, frozenset({"spark"}), frozenset({"c"}))])
[]
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


def preemptions(queued: Iterable[QueuedRun], running: Iterable[RunningRun]) -> list[Preemption]:
    """The running runs to terminate, each once, for the queued runs that may pre-empt,
    highest priority first."""
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
