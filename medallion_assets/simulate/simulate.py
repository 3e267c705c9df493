"""What the catalog's schedule would do over a day: a discrete-event simulation.

Every enabled pipeline with a schedule requests a run at each of its cron ticks in the window.
A run waits in the queue (highest priority first, then oldest) until fewer runs are going than
its profile's ``max_concurrent_runs`` and the machine's ``max_runs``, then starts up
(``run_start_s``: its process and its Spark) before its first step. A focus run
(``preempt_low_priority``) that finds no room pre-empts the lowest-priority run going, whose
steps in flight are lost and which goes back to the queue with what it finished kept. Inside a
run, ready steps start up to ``max_workers`` at a time, chosen by the run's ``SchedulingPolicy``
(priority and reserved slots under focus, least loaded systems under balanced, ``skip_below``
left out) against every system's ``max_concurrent_jobs``, counted over all runs. A step takes
its table's duration (the caller's: past runs, else an estimate). Outages (``Outage``: a node
down from a moment on) are met the way the running system meets them: recovery moves each
table that needs a down node to its cheapest available path (``recovery.plan_recovery``), which
changes the systems its step holds; a table no path produces is left out, and its readers go on
with its published version.

The result says, per dataset, when it was first ready and along which route; per system, its
peak concurrency against its limit; which exposures were late against their deadline; and the
reroutes taken. Pure: durations and the window come in, nothing is read or written.

    result = simulate(catalog, durations, start=datetime(2026, 1, 5), profile="focus")
    result.as_dict()["datasets"][0]  # {"table": ..., "finish_s": ..., "path": [...]}
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import cast

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.cron import fire_times
from medallion_assets.catalog.operations import ProfileSettings
from medallion_assets.profiles.priority import run_priority
from medallion_assets.profiles.profiles import effective_profile
from medallion_assets.recovery.paths import RecoveryGraph, plan_recovery
from medallion_assets.recovery.reroute import PRIMARY
from medallion_assets.simulate.scheduling import SchedulingPolicy, TableTraits, traits_of

# A project without profiles.yaml runs as Dagster would: one run at a time, no priorities.
NO_PROFILE = ProfileSettings(max_concurrent_runs=1, spread_over_systems=False)


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


@dataclass(frozen=True)
class _Request:
    """A pipeline's run requested at one of its ticks."""

    pipeline: str
    tables: list[str]
    profile: str
    settings: ProfileSettings
    priority: int


class _Ready:
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
class _Run:
    number: int
    pipeline: str
    requested: float
    priority: int
    settings: ProfileSettings
    profile: str
    todo: list[str]
    waiting_on: dict[str, int] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    ready: _Ready = field(default_factory=lambda: _Ready())
    # table -> the step's generation and the systems it holds
    running: dict[str, tuple[int, tuple[str, ...]]] = field(default_factory=dict)
    done: set[str] = field(default_factory=set)
    steps_from: float = 0.0  # admitted, its steps start from here (after the run's start-up)

    @property
    def finished(self) -> bool:
        return len(self.done) == len(self.todo)

    def key(self) -> tuple[int, float, int]:
        return (-self.priority, self.requested, self.number)


def simulate(
    catalog: Catalog,
    durations: Mapping[str, float],
    *,
    start: datetime,
    end: datetime | None = None,
    profile: str | None = None,
    overrides: Mapping[str, str] | None = None,
    outages: Sequence[Outage] = (),
    max_workers: int = 2,
    routes: Mapping[str, str] | None = None,
    max_runs: int | None = None,
    run_start_s: float = 0.0,
) -> Simulation:
    """Simulate ``[start, end)`` (default: one day). ``durations``: table -> seconds of one
    step (a table missing builds in 0 s). ``profile`` forces one profile on every pipeline;
    else each runs under the one in force (``overrides``: the control store's, pipeline or
    ``all`` -> profile). ``routes``: the routes in force at the start (table -> route).
    ``max_runs``: runs the machine takes at once whatever the profiles allow (a local Spark's
    ``run_slots``); ``run_start_s``: seconds from a run leaving the queue to its first step
    (its process and Spark starting), paid again by a pre-empted run started anew."""
    end = end or start + timedelta(days=1)
    if max_workers < 1:
        raise ValueError(f"max_workers is {max_workers}: give at least 1 worker")
    profiles = catalog.profiles
    if profile is not None and (profiles is None or profile not in profiles.profiles):
        known = ", ".join(profiles.profiles) if profiles is not None else "none"
        raise ValueError(f"no profile named {profile!r} in profiles.yaml (defined: {known})")
    sim = _Simulator(catalog, durations, max_workers, dict(routes or {}), max_runs, run_start_s)
    window = (end - start).total_seconds()
    for pipeline_id, pipeline in catalog.pipelines.items():
        if not pipeline.enabled or not pipeline.schedule:
            continue
        if profiles is None:
            name, settings = "none", NO_PROFILE
        else:
            name = profile or effective_profile(profiles, pipeline_id, overrides or {}).name
            settings = profiles.profiles[name].settings
        tables = list(catalog.pipeline_datasets(pipeline_id))
        levels = [catalog.datasets[t].criticality for t in tables]
        priority = run_priority(profiles, levels, {pipeline_id: name}).priority
        for moment in fire_times(pipeline.schedule, start, end):
            at = (moment - start).total_seconds()
            sim.push(at, "request", _Request(pipeline_id, tables, name, settings, priority))
    for outage in outages:
        sim.push(max(0.0, outage.at_s), "down", outage.node)
    sim.run(window)
    return Simulation(
        profile or "in force",
        start,
        end,
        sim.run_count,
        tuple(sim.results()),
        tuple(sim.peaks()),
        tuple(_late(catalog, sim, start, end)),
        tuple(sim.reroutes),
        sim.preemptions,
        tuple(t for t in catalog.datasets if t not in sim.first),
        sim.last,
        sim.builds,
    )


def simulate_runs(
    catalog: Catalog,
    durations: Mapping[str, float],
    runs: Sequence[tuple[str, Sequence[str]]],
    profile: str | None = None,
    max_workers: int = 2,
    max_runs: int | None = None,
    run_start_s: float = 0.0,
    shared_workers: bool = False,
) -> Simulation:
    """``runs`` (a name, its tables) all requested at once, under ``profile`` (default: the
    active one), as a backfill's are; ``makespan_s`` is when the last one ends. ``max_runs``
    and ``run_start_s`` as in ``simulate``; ``shared_workers``: the runs share ``max_workers``
    (one process's threads over one Spark, as `medallion run` runs them) rather than each run
    having its own."""
    profiles = catalog.profiles
    if profiles is None:
        name, settings = "none", NO_PROFILE
    else:
        name = profile or profiles.active
        settings = profiles.profiles[name].settings
    sim = _Simulator(catalog, durations, max_workers, {}, max_runs, run_start_s)
    sim.shared_workers = shared_workers
    for label, tables in runs:
        levels = [catalog.datasets[t].criticality for t in tables]
        priority = run_priority(profiles, levels, {}).priority if profiles else 0
        sim.push(0.0, "request", _Request(label, list(tables), name, settings, priority))
    sim.run(float("inf"))
    start = datetime(2000, 1, 1)
    return Simulation(
        name,
        start,
        start,
        sim.run_count,
        tuple(sim.results()),
        tuple(sim.peaks()),
        (),
        (),
        sim.preemptions,
        makespan_s=sim.last,
    )


class _Simulator:
    def __init__(
        self,
        catalog: Catalog,
        durations: Mapping[str, float],
        max_workers: int,
        routes: dict[str, str],
        max_runs: int | None = None,
        run_start_s: float = 0.0,
    ):
        if max_runs is not None and max_runs < 1:
            raise ValueError(f"max_runs is {max_runs}: the machine must take at least 1 run")
        if run_start_s < 0:
            raise ValueError(f"run_start_s is {run_start_s}: a start-up takes 0 s or more")
        self.catalog = catalog
        self.durations = durations
        self.max_workers = max_workers
        self.max_runs = max_runs
        self.run_start_s = run_start_s
        self.shared_workers = False  # max_workers over all runs together, not per run
        self.graph = RecoveryGraph.of(catalog)
        self.routes = {t: routes.get(t, PRIMARY) for t in catalog.datasets}
        self.base = traits_of(catalog)
        self.limits = {
            name: s.throttle.max_concurrent_jobs
            for name, s in catalog.systems.items()
            if s.throttle.max_concurrent_jobs is not None
        }
        self.down: set[str] = set()
        self.recover_at: float | None = None  # nodes went down: plan recovery at this time
        self.unreachable: set[str] = set()
        self.gone: frozenset[str] = frozenset()  # left out: down, or no available path
        self.events: list[tuple[float, int, str, object]] = []
        self.sequence = itertools.count()
        self.queue: list[_Run] = []
        self.going: list[_Run] = []
        self.load: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.generation = itertools.count(1)
        self.first: dict[str, TableResult] = {}
        self.starts: dict[tuple[int, str], float] = {}
        self.reroutes: list[RerouteTaken] = []
        self.preemptions = 0
        self.run_count = 0
        self.last = 0.0  # when the last step ended
        self.builds = 0
        self._policies: dict[tuple[str, int], SchedulingPolicy] = {}
        self._routes_version = 0
        self._requests: list[tuple[float, str, list[str], str, ProfileSettings, int]] = []

    # --- events --------------------------------------------------------------------------

    def push(self, at: float, kind: str, payload: object) -> None:
        heapq.heappush(self.events, (at, next(self.sequence), kind, payload))

    def run(self, window: float) -> None:
        while self.events:
            now = self.events[0][0]
            if now >= window and not self.going and not self.queue:
                break
            while self.events and self.events[0][0] == now:
                _, _, kind, payload = heapq.heappop(self.events)
                self._handle(now, kind, payload)
                if kind == "finish":
                    self.last = now
            if self.recover_at is not None:
                self._recover(now)
                self.recover_at = None
            self._dispatch(now)

    def _handle(self, now: float, kind: str, payload: object) -> None:
        if kind == "request":
            self._new_run(now, cast(_Request, payload))
        elif kind == "finish":
            run, table, generation = cast(tuple[_Run, str, int], payload)
            if run.running.get(table, (0, ()))[0] != generation:
                return  # pre-empted: the step was lost
            self._finish(now, run, table)
        elif kind == "down":
            self.down.add(str(payload))
            self.recover_at = now  # once for every node going down at this moment
        # "started": a run's start-up is over; the dispatch that follows starts its steps

    # --- runs ----------------------------------------------------------------------------

    def _new_run(self, now: float, request: _Request) -> None:
        self.run_count += 1
        policy = self._policy(request.profile, request.settings)
        skipped = policy.skipped(request.tables)
        todo = [t for t in request.tables if t not in skipped]
        run = _Run(
            self.run_count,
            request.pipeline,
            now,
            request.priority,
            request.settings,
            request.profile,
            todo,
        )
        wanted = set(todo)
        for table in todo:
            ups = [u for u in self.base[table].upstream if u in wanted]
            run.waiting_on[table] = len(ups)
            for upstream in ups:
                run.children.setdefault(upstream, []).append(table)
        for table in todo:
            if not run.waiting_on[table]:
                run.ready.add(table)
        if not todo:
            return
        self.queue.append(run)

    def _admit(self, now: float) -> None:
        self.queue.sort(key=_Run.key)
        while self.queue:
            run = self.queue[0]
            room = run.settings.max_concurrent_runs
            if self.max_runs is not None:
                room = min(room, self.max_runs)
            if len(self.going) >= room:
                victim = self._victim(run)
                if victim is None:
                    return
                self._preempt(victim)
            self.queue.pop(0)
            self.going.append(run)
            run.steps_from = now + self.run_start_s
            if self.run_start_s:
                self.push(run.steps_from, "started", run.number)

    def _victim(self, run: _Run) -> _Run | None:
        if not run.settings.preempt_low_priority:
            return None
        lower = [r for r in self.going if r.priority < run.priority]
        return max(lower, key=_Run.key) if lower else None

    def _preempt(self, victim: _Run) -> None:
        self.preemptions += 1
        for table, (_, systems) in list(victim.running.items()):
            self._release(systems)
            victim.ready.add(table)
        victim.running.clear()
        self.going.remove(victim)
        self.queue.append(victim)
        self.queue.sort(key=_Run.key)

    def _dispatch(self, now: float) -> None:
        """Admit what the queue allows, then start steps, the highest-priority run first;
        again while a run ends here (its tables all left out) and frees room."""
        while True:
            self._admit(now)
            for run in sorted(self.going, key=_Run.key):
                self._start_steps(now, run)
            ended = [r for r in self.going if r.finished]
            if not ended:
                return
            self.going = [r for r in self.going if not r.finished]

    def _busy(self, run: _Run) -> int:
        if self.shared_workers:
            return sum(len(r.running) for r in self.going)
        return len(run.running)

    def _start_steps(self, now: float, run: _Run) -> None:
        if self._busy(run) >= self.max_workers or not run.ready or now < run.steps_from:
            return
        policy = self._policy(run.profile, run.settings)
        while self._busy(run) < self.max_workers and run.ready:
            choice = self._pick(run, policy)
            if choice is None:
                return
            run.ready.take(choice)
            if choice in self.gone:
                self._finish(now, run, choice, left_out=True)
                continue
            systems = policy.systems(choice)
            run.running[choice] = (next(self.generation), systems)
            for system in systems:
                self.load[system] = self.load.get(system, 0) + 1
                self.peak[system] = max(self.peak.get(system, 0), self.load[system])
            self.starts[(run.number, choice)] = now
            duration = float(self.durations.get(choice, 0.0))
            self.push(now + duration, "finish", (run, choice, run.running[choice][0]))

    def _pick(self, run: _Run, policy: SchedulingPolicy) -> str | None:
        # Left-out tables go first: they hold nothing and free their readers.
        run.ready.under(policy, self.gone)
        return run.ready.pick(self.load)

    def _finish(self, now: float, run: _Run, table: str, left_out: bool = False) -> None:
        if not left_out:
            self._release(run.running.pop(table)[1])
        run.done.add(table)
        self.builds += 1
        if table not in self.first:
            route = self.routes[table]
            step = self.graph.step(table, route)
            self.first[table] = TableResult(
                table,
                self.catalog.datasets[table].criticality,
                run.pipeline,
                self.starts.get((run.number, table), now),
                now,
                route,
                (*step.needs, table),
                "unreachable" if left_out else "built",
            )
        for child in run.children.get(table, ()):
            run.waiting_on[child] -= 1
            if not run.waiting_on[child]:
                run.ready.add(child)

    def _release(self, systems: tuple[str, ...]) -> None:
        for system in systems:
            self.load[system] -= 1

    # --- routes and outages --------------------------------------------------------------

    def _recover(self, now: float) -> None:
        plan = plan_recovery(self.graph, self.down, self.routes)
        for reroute in plan.reroutes:
            self.routes[reroute.table] = reroute.route
            self.reroutes.append(RerouteTaken(now, reroute.table, reroute.route, reroute.around))
        self.unreachable = set(plan.unreachable)
        self.gone = frozenset(self.unreachable | self.down)
        if plan.reroutes:
            self._routes_version += 1

    def _systems(self, table: str) -> tuple[str, ...]:
        route = self.routes[table]
        if route == PRIMARY:
            return self.base[table].systems
        needs = self.graph.step(table, route).needs
        systems = [n.partition(":")[2] for n in needs if n.startswith("system:")]
        target = self.catalog.datasets[table].target
        if target is not None:
            systems.append(target.system)
        return tuple(dict.fromkeys(systems))

    def _policy(self, profile: str, settings: ProfileSettings) -> SchedulingPolicy:
        key = (profile, self._routes_version)
        if key not in self._policies:
            traits = self.base
            if self._routes_version:
                traits = {
                    t: TableTraits(tr.criticality, self._systems(t), tr.upstream)
                    for t, tr in self.base.items()
                }
            self._policies[key] = SchedulingPolicy(traits, settings, self.limits, profile)
        return self._policies[key]

    # --- what it says --------------------------------------------------------------------

    def results(self) -> list[TableResult]:
        return [self.first[t] for t in self.catalog.datasets if t in self.first]

    def peaks(self) -> list[SystemPeak]:
        names = dict.fromkeys([*self.catalog.systems, *self.peak])
        return [SystemPeak(s, self.peak.get(s, 0), self.limits.get(s)) for s in names]


def _late(catalog: Catalog, sim: _Simulator, start: datetime, end: datetime) -> list[LateExposure]:
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
        ready = {t: sim.first[t].finish_s if t in sim.first else None for t in exposure.depends_on}
        waiting = tuple(t for t, s in ready.items() if s is None or s > due)
        if waiting:
            known = [s for s in ready.values() if s is not None]
            ready_s = max(known) if len(known) == len(ready) else None
            late.append(LateExposure(exposure.name, due, ready_s, waiting))
    return late
