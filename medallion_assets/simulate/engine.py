"""The discrete-event engine of a simulation: runs admitted by priority and capacity, their ready
steps started against every system's limits, outages met by recovery (see simulate)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping
from typing import cast

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.operations import ProfileSettings
from medallion_assets.recovery.paths import RecoveryGraph
from medallion_assets.recovery.plan import plan_recovery
from medallion_assets.recovery.reroute import PRIMARY
from medallion_assets.simulate.results import (
    RerouteTaken,
    SystemPeak,
    TableResult,
)
from medallion_assets.simulate.runs import RequestedRun, SimulatedRun
from medallion_assets.simulate.scheduling import SchedulingPolicy, TableTraits, traits_of

# A project without profiles.yaml runs as Dagster would: one run at a time, no priorities.
NO_PROFILE = ProfileSettings(max_concurrent_runs=1, spread_over_systems=False)


class Simulator:
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
        self.queue: list[SimulatedRun] = []
        self.going: list[SimulatedRun] = []
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
            self._new_run(now, cast(RequestedRun, payload))
        elif kind == "finish":
            run, table, generation = cast(tuple[SimulatedRun, str, int], payload)
            if run.running.get(table, (0, ()))[0] != generation:
                return  # pre-empted: the step was lost
            self._finish(now, run, table)
        elif kind == "down":
            self.down.add(str(payload))
            self.recover_at = now  # once for every node going down at this moment
        # "started": a run's start-up is over; the dispatch that follows starts its steps

    # --- runs ----------------------------------------------------------------------------

    def _new_run(self, now: float, request: RequestedRun) -> None:
        self.run_count += 1
        policy = self._policy(request.profile, request.settings)
        skipped = policy.skipped(request.tables)
        todo = [t for t in request.tables if t not in skipped]
        run = SimulatedRun(
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
        self.queue.sort(key=SimulatedRun.key)
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

    def _victim(self, run: SimulatedRun) -> SimulatedRun | None:
        if not run.settings.preempt_low_priority:
            return None
        lower = [r for r in self.going if r.priority < run.priority]
        return max(lower, key=SimulatedRun.key) if lower else None

    def _preempt(self, victim: SimulatedRun) -> None:
        self.preemptions += 1
        for table, (_, systems) in list(victim.running.items()):
            self._release(systems)
            victim.ready.add(table)
        victim.running.clear()
        self.going.remove(victim)
        self.queue.append(victim)
        self.queue.sort(key=SimulatedRun.key)

    def _dispatch(self, now: float) -> None:
        """Admit what the queue allows, then start steps, the highest-priority run first;
        again while a run ends here (its tables all left out) and frees room."""
        while True:
            self._admit(now)
            for run in sorted(self.going, key=SimulatedRun.key):
                self._start_steps(now, run)
            ended = [r for r in self.going if r.finished]
            if not ended:
                return
            self.going = [r for r in self.going if not r.finished]

    def _busy(self, run: SimulatedRun) -> int:
        if self.shared_workers:
            return sum(len(r.running) for r in self.going)
        return len(run.running)

    def _start_steps(self, now: float, run: SimulatedRun) -> None:
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

    def _pick(self, run: SimulatedRun, policy: SchedulingPolicy) -> str | None:
        # Left-out tables go first: they hold nothing and free their readers.
        run.ready.under(policy, self.gone)
        return run.ready.pick(self.load)

    def _finish(self, now: float, run: SimulatedRun, table: str, left_out: bool = False) -> None:
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
