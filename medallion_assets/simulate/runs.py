"""A simulated run: the request a pipeline's tick makes, the run it becomes (what it waits on,
what runs, what is done) and its ready steps, grouped so a pick is one look per group."""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

from medallion_assets.catalog.operations import ProfileSettings
from medallion_assets.simulate.scheduling import SchedulingPolicy


@dataclass(frozen=True)
class RequestedRun:
    """A pipeline's run requested at one of its ticks."""

    pipeline: str
    tables: list[str]
    profile: str
    settings: ProfileSettings
    priority: int


class ReadySteps:
    """A run's ready tables, grouped by the slots they need (``policy.caps``: tables with the
    same caps have the same room and the same load), each group a heap by ``policy.rank``:
    picking is then one look at each group's head, as ``SchedulingPolicy.pick`` decides.
    Tables no available path produces come first: they hold nothing and free their readers."""

    def __init__(self) -> None:
        self.tables: set[str] = set()
        self.groups: dict[tuple[tuple[str, int], ...], list[tuple[int, str]]] = {}
        self.left_out: list[str] = []
        self.policy: SchedulingPolicy | None = None
        self.gone: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.tables)

    def add(self, table: str) -> None:
        self.tables.add(table)
        if self.policy is None:
            return
        if table in self.gone:
            self.left_out.append(table)
            return
        group = self.groups.setdefault(self.policy.caps(table), [])
        heapq.heappush(group, (self.policy.rank(table), table))

    def under(self, policy: SchedulingPolicy, gone: frozenset[str]) -> None:
        """Group by ``policy`` with ``gone`` left out (again when either changed)."""
        if policy is self.policy and gone is self.gone:
            return
        self.policy, self.gone, self.groups, self.left_out = policy, gone, {}, []
        tables, self.tables = self.tables, set()
        for table in tables:
            self.add(table)

    def take(self, table: str) -> None:
        self.tables.discard(table)  # its heap entry is dropped when it comes up

    def pick(self, load: Mapping[str, int]) -> str | None:
        assert self.policy is not None
        while self.left_out:
            table = self.left_out.pop()
            if table in self.tables:
                return table
        policy, best, best_key = self.policy, None, None
        for caps, heap in list(self.groups.items()):
            while heap and heap[0][1] not in self.tables:
                heapq.heappop(heap)
            if not heap:
                del self.groups[caps]
                continue
            if not all(load.get(system, 0) < cap for system, cap in caps):
                continue
            rank, table = heap[0]
            key: tuple[object, ...] = (rank,)
            if policy.settings.spread_over_systems:
                key = (policy.load(table, load), rank)
            if best_key is None or key < best_key:
                best, best_key = table, key
        return best


@dataclass
class SimulatedRun:
    number: int
    pipeline: str
    requested: float
    priority: int
    settings: ProfileSettings
    profile: str
    todo: list[str]
    waiting_on: dict[str, int] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    ready: ReadySteps = field(default_factory=lambda: ReadySteps())
    # table -> the step's generation and the systems it holds
    running: dict[str, tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)
    steps_from: float = 0.0  # admitted, its steps start from here (after the run's start-up)

    @property
    def finished(self) -> bool:
        return len(self.done) == len(self.todo)

    def key(self) -> tuple[int, float, int]:
        return (-self.priority, self.requested, self.number)
