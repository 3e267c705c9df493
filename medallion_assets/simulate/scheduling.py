"""Which ready step of a run starts next under a profile: the step-level side of balanced and
focus, as a pure policy the threaded executor asks while it runs.

The executor keeps, per system, how many of its steps are running, and calls:

- ``skipped(selected)`` once, before it starts: the tables the profile leaves out, with why;
- ``pick(ready, running)`` whenever a worker is free: the ready table to start now, or None
  when every ready table must wait (a system at its limit, or slots reserved for critical);
- ``systems(table)`` to count a started table against each of its systems (and release them
  when it ends).

``priority`` and ``may_start`` are the two halves of ``pick`` (``rank`` is ``priority`` as one
number, for a numeric sort key); ``simulate`` replays the whole run with unit durations, which
is what ``medallion plan`` shows.

>>> from medallion_assets.catalog.operations import ProfileSettings
>>> policy = SchedulingPolicy(
...     tables={
...         "bronze.a": TableTraits("normal", ("s3", "spark")),
...         "bronze.b": TableTraits("critical", ("s3", "spark")),
...         "gold.c": TableTraits("low", ("spark",), upstream=("bronze.a",)),
...     },
...     settings=ProfileSettings(max_concurrent_runs=1, spread_over_systems=False),
...     limits={"s3": 2, "spark": 4},
... )
>>> policy.pick(["bronze.a", "bronze.b"], {})
'bronze.b'
>>> policy.may_start("bronze.a", {"s3": 2})
False
>>> from medallion_assets.simulate.schedule import simulate
>>> simulate(policy, {"bronze.a", "bronze.b", "gold.c"}, max_workers=1).order
('bronze.b', 'bronze.a', 'gold.c')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from medallion_assets.catalog.operations import ProfileSettings
from medallion_assets.lineage.dag import DAG
from medallion_assets.lineage.graph import CRITICALITY_RANK

if TYPE_CHECKING:
    from medallion_assets.catalog.catalog import Catalog

PriorityKey = tuple[int, int, int, int, str]


@dataclass(frozen=True)
class TableTraits:
    """What the policy needs of one table: its criticality, every system one run of it holds
    (the compute system for every build, plus the raw source's system for bronze and the
    warehouse target's for a loaded gold table), and the tables it waits for."""

    criticality: str
    systems: tuple[str, ...]
    upstream: tuple[str, ...] = ()


@dataclass(frozen=True)
class SchedulingPolicy:
    """The start rules a profile's settings imply for the steps of one run.

    ``tables`` is every table the run could hold, in a stable order (the catalog's execution
    order) that breaks the last ties; ``limits`` is each system's ``max_concurrent_jobs``
    (a system without one is never a reason to wait)."""

    tables: Mapping[str, TableTraits]
    settings: ProfileSettings
    limits: Mapping[str, int]
    profile: str = ""
    _order: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, traits in self.tables.items():
            if traits.criticality not in CRITICALITY_RANK:
                raise ValueError(
                    f"table {name}: criticality {traits.criticality!r} is not one of "
                    f"{', '.join(CRITICALITY_RANK)}"
                )
        object.__setattr__(self, "_order", {name: i for i, name in enumerate(self.tables)})

    @classmethod
    def from_catalog(
        cls,
        catalog: Catalog,
        settings: ProfileSettings,
        limits: Mapping[str, int] | None = None,
        profile: str = "",
    ) -> SchedulingPolicy:
        """The policy for ``catalog``'s tables; ``limits`` default to ``systems.yaml``."""
        limits = system_limits(catalog) if limits is None else dict(limits)
        return cls(traits_of(catalog), settings, limits, profile)

    # --- the executor's surface ------------------------------------------------------------

    def systems(self, table: str) -> tuple[str, ...]:
        """Every system one run of ``table`` holds a slot of."""
        return self._traits(table).systems

    def priority(self, table: str) -> PriorityKey:
        """Sort key, lower starts first: the criticality_priority of the most urgent table
        that needs it (itself, or any table downstream, which cannot start before it: so a
        critical table's upstream goes first), then its own priority and criticality, then
        the catalog's order."""
        traits = self._traits(table)
        own = self._weights.get(traits.criticality, 0)
        return (
            -self._inherited[table],
            -own,
            -CRITICALITY_RANK[traits.criticality],
            self._order[table],
            table,
        )

    def rank(self, table: str) -> int:
        """``table``'s place in the priority order of all the policy's tables (0 starts
        first): ``priority`` as one number, for an executor whose sort key is numeric."""
        self._traits(table)
        return self._ranks[table]

    def skipped(self, selected: Iterable[str]) -> dict[str, str]:
        """The selected tables this profile leaves out of the run, with why: those below
        ``skip_below``, except the upstream of a critical table when
        ``include_upstream_of_critical``. Tables downstream of a skipped one read its published
        version."""
        floor = self.settings.skip_below
        if floor is None:
            return {}
        result = {}
        for table in self._in_order(selected):
            criticality = self._traits(table).criticality
            if CRITICALITY_RANK[criticality] >= CRITICALITY_RANK[floor]:
                continue
            if self.settings.include_upstream_of_critical and table in self._feeds_critical:
                continue
            result[table] = f"{criticality} is below the profile's skip_below ({floor})"
        return result

    def may_start(self, table: str, running: Mapping[str, int]) -> bool:
        """Whether ``table`` may start while ``running`` (system -> steps running on it)."""
        return _has_room(self.caps(table), running)

    def blocker(self, table: str, running: Mapping[str, int]) -> str | None:
        """Why ``table`` may not start now (None: it may): one of its systems is at its
        limit, or only slots reserved for critical work are left and it is not critical."""
        for system, cap in self.caps(table):
            busy = running.get(system, 0)
            if busy < cap:
                continue
            limit = self.limits[system]
            if busy >= limit:
                return f"{system} at its limit ({busy}/{limit} running)"
            return (
                f"{system}: {self.reserved(system)} of its {limit} slots reserved for "
                f"critical ({busy} running)"
            )
        return None

    def pick(self, ready: Iterable[str], running: Mapping[str, int]) -> str | None:
        """The ready table to start next, or None when none may start. Under
        ``spread_over_systems`` (balanced) the one whose systems are least loaded (see
        ``load``), priority breaking ties; otherwise (focus) strictly by priority."""
        # Tables with the same caps have the same room, and on the same systems the same
        # load: each is worked out once per call (a wide run has hundreds of ready tables).
        room: dict[tuple[tuple[str, int], ...], bool] = {}
        startable = []
        for table in ready:
            caps = self.caps(table)
            if caps not in room:
                room[caps] = _has_room(caps, running)
            if room[caps]:
                startable.append(table)
        if not startable:
            return None
        if not self.settings.spread_over_systems:
            return min(startable, key=self._ranks.__getitem__)
        loads: dict[tuple[str, ...], tuple[float, ...]] = {}
        for table in startable:
            systems = self.tables[table].systems
            if systems not in loads:
                loads[systems] = self.load(table, running)
        return min(startable, key=lambda t: (loads[self.tables[t].systems], self._ranks[t]))

    # --- the rules behind it ---------------------------------------------------------------

    def favoured(self, table: str) -> bool:
        """Whether ``table`` may take slots reserved for critical work: a critical table, and
        with ``include_upstream_of_critical`` every table a critical one reads from."""
        if self._traits(table).criticality == "critical":
            return True
        return self.settings.include_upstream_of_critical and table in self._feeds_critical

    def reserved(self, system: str) -> int:
        """Slots of ``system`` only favoured tables may take: the profile's
        ``reserved_capacity_for_critical``, but never the last one, so the rest of the work
        always moves on a system whose limit is at or below the reservation."""
        limit = self.limits.get(system)
        if limit is None:
            return 0
        return min(self.settings.reserved_capacity_for_critical, limit - 1)

    def load(self, table: str, running: Mapping[str, int]) -> tuple[float, ...]:
        """How busy ``table``'s systems are now: the fraction of its limit each limited system
        is at, highest first, idle ones left out (an idle system is no reason to wait, whatever
        its limit). Under balanced the smallest key starts first, so starts go to the systems
        with the most room left and none becomes a hotspot."""
        fractions = [
            running.get(s, 0) / self.limits[s]
            for s in self.systems(table)
            if s in self.limits and running.get(s, 0)
        ]
        return tuple(sorted(fractions, reverse=True))

    def upstream(self, table: str) -> tuple[str, ...]:
        """The tables ``table`` waits for (those of the policy's tables)."""
        return tuple(u for u in self._traits(table).upstream if u in self.tables)

    def caps(self, table: str) -> tuple[tuple[str, int], ...]:
        """Each limited system of ``table`` and the count of its running steps below which
        ``table`` may start: ``blocker`` in short (tables with equal caps wait alike)."""
        try:
            return self._caps[table]
        except KeyError:
            raise KeyError(f"unknown table {table!r}") from None

    def _traits(self, table: str) -> TableTraits:
        try:
            return self.tables[table]
        except KeyError:
            raise KeyError(f"unknown table {table!r}") from None

    def _in_order(self, selected: Iterable[str]) -> list[str]:
        wanted = set(selected)
        for table in wanted:
            self._traits(table)
        return [t for t in self.tables if t in wanted]

    @cached_property
    def _weights(self) -> dict[str, int]:
        """criticality_priority by criticality (one the profile leaves out weighs 0)."""
        return {str(name): weight for name, weight in self.settings.criticality_priority.items()}

    @cached_property
    def _dag(self) -> DAG[str]:
        return DAG(self.tables, [(u, t) for t in self.tables for u in self.upstream(t)])

    @cached_property
    def _inherited(self) -> dict[str, int]:
        """Each table's priority raised to that of the most urgent table downstream of it."""
        inherited: dict[str, int] = {}
        for table in reversed(self._dag.topological_order()):
            own = self._weights.get(self.tables[table].criticality, 0)
            below = [inherited[c] for c in self._dag.children(table)]
            inherited[table] = max([own, *below])
        return inherited

    @cached_property
    def _caps(self) -> dict[str, tuple[tuple[str, int], ...]]:
        return {
            table: tuple(
                (system, limit if self.favoured(table) else limit - self.reserved(system))
                for system in traits.systems
                if (limit := self.limits.get(system)) is not None
            )
            for table, traits in self.tables.items()
        }

    @cached_property
    def _ranks(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(sorted(self.tables, key=self.priority))}

    @cached_property
    def _feeds_critical(self) -> frozenset[str]:
        """Every table some critical table reads from, directly or not."""
        feeds: set[str] = set()
        for table, traits in self.tables.items():
            if traits.criticality == "critical":
                feeds.update(self._dag.upstream(table))
        return frozenset(feeds)


def _has_room(caps: tuple[tuple[str, int], ...], running: Mapping[str, int]) -> bool:
    return all(running.get(system, 0) < cap for system, cap in caps)


def system_limits(catalog: Catalog) -> dict[str, int]:
    """system -> its max_concurrent_jobs, for the systems that declare one."""
    return {
        name: system.throttle.max_concurrent_jobs
        for name, system in catalog.systems.items()
        if system.throttle.max_concurrent_jobs is not None
    }


def traits_of(catalog: Catalog) -> dict[str, TableTraits]:
    """Every dataset's traits, in the catalog's execution order. A step waits for the tables
    its SQL reads and those its checks read (Dagster runs both first)."""
    compute = catalog.project.compute_system
    result = {}
    for name, dataset in catalog.datasets.items():
        systems = [compute]
        systems += [source.system for _, source in catalog.raw_sources(dataset)]
        if dataset.target is not None:
            systems.append(dataset.target.system)
        waits = [*dataset.upstream, *dataset.check_dependencies]
        result[name] = TableTraits(
            dataset.criticality,
            tuple(dict.fromkeys(systems)),
            tuple(dict.fromkeys(u for u in waits if u in catalog.datasets and u != name)),
        )
    return result
