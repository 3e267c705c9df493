"""Which ready step of a run starts next, under the profile the run was requested under.

The threaded executor (``threads.py``) asks ``StepOrder`` two things, from the steps running
at that moment: the sort key of each ready step (``key``: under focus strictly the planner's
priority — critical tables and their upstream first; under balanced the step whose systems
are least loaded first, priority breaking ties) and whether the best one may start now
(``may_start``: no system above its ``max_concurrent_jobs``, slots reserved for critical work
left to it). The rules are ``simulate.scheduling.SchedulingPolicy``'s, the same ``medallion
plan`` replays; this module maps Dagster step keys to tables and counts systems.

Which profile: the one the run's request named in its ``medallion/profile`` tag (every request
the project makes carries one, decided when it is made: ``profiles.priority``), so a run's
priority in the queue, its step order and its ``skip_below`` all come from one decision. A run
without the tag (launched by hand on an instance without the project's run coordinator) runs
under the profile in force for its pipeline when it starts.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from dagster import InitExecutorContext

from medallion_assets.adapters.threads import ThreadedExecutor
from medallion_assets.adapters.translator import DEFAULT_NAMES, Names
from medallion_assets.catalog import Catalog
from medallion_assets.control.store import ControlStore
from medallion_assets.control_plane import ControlPlane
from medallion_assets.profiles.profiles import EffectiveProfile
from medallion_assets.runtime.run_profile import policy_of, run_profile
from medallion_assets.settings import MedallionSettings
from medallion_assets.simulate.scheduling import SchedulingPolicy

_BLOCKED = 1e15  # a step that may not start sorts after every one that may
_LOAD = 1e9  # then the load of its systems (per mille of the limit), then its rank


@dataclass(frozen=True)
class StepOrder:
    """The start order of a run's steps under ``profile``."""

    policy: SchedulingPolicy
    tables: Mapping[str, str]  # step key -> table
    profile: EffectiveProfile | None = None

    @classmethod
    def of(
        cls,
        catalog: Catalog,
        store: ControlStore,
        pipeline: str | None,
        tags: Mapping[str, str] | None = None,
        names: Names = DEFAULT_NAMES,
    ) -> StepOrder | None:
        """The order for a run of ``pipeline`` (None: the whole project) with ``tags`` under
        ``run_profile``; None when the project defines no profiles (Dagster's own order)."""
        effective = run_profile(catalog, store, pipeline, tags or {})
        if effective is None:
            return None
        policy = policy_of(catalog, effective.name)
        tables = {names.step(name): name for name in catalog.datasets}
        return cls(policy, tables, effective)

    def skipped(self, tables: Collection[str]) -> dict[str, str]:
        """The tables the profile leaves out of a run (``skip_below``), with why."""
        return self.policy.skipped(tables)

    def key(self, step_key: str, running: Collection[str]) -> float:
        """Lower starts first; ``running`` are the step keys running now."""
        table = self.tables.get(step_key)
        if table is None:
            return 0.0
        systems = self._systems(running)
        key = float(self.policy.rank(table))
        if not self.policy.may_start(table, systems):
            key += _BLOCKED
        if self.policy.settings.spread_over_systems:
            busiest = max(self.policy.load(table, systems), default=0.0)
            key += round(busiest * 1000) * _LOAD
        return key

    def may_start(self, step_key: str, running: Collection[str]) -> bool:
        table = self.tables.get(step_key)
        return table is None or self.policy.may_start(table, self._systems(running))

    def _systems(self, running: Collection[str]) -> Counter[str]:
        return Counter(
            system
            for key in running
            if key in self.tables
            for system in self.policy.systems(self.tables[key])
        )


def executor_for(
    catalog: Catalog | None,
    names: Names = DEFAULT_NAMES,
    settings_env: Mapping[str, str] | None = None,
) -> dg.ExecutorDefinition:
    """The project's executor: a run's steps on up to ``max_workers`` threads over one Spark
    (default ``MEDALLION_MAX_WORKERS``, else the cores), started in the order of the profile
    in force for the run's pipeline when the run starts. ``catalog`` None: steps in Dagster's
    order (a code location's default when it holds several projects). ``settings_env``: the
    project's settings over the environment's."""

    @dg.executor(
        name="medallion_threads",
        config_schema={
            "max_workers": dg.Field(
                int,
                is_required=False,
                description="steps at a time (default: MEDALLION_MAX_WORKERS, else the cores)",
            )
        },
    )
    def _threads(context: InitExecutorContext) -> ThreadedExecutor:
        root = catalog.root if catalog is not None else Path.cwd()
        settings = MedallionSettings.from_env({**os.environ, **(settings_env or {})}, root)
        configured = context.executor_config.get("max_workers")
        workers = configured if isinstance(configured, int) else settings.workers
        if catalog is None:
            return ThreadedExecutor(workers)
        job = context.job.get_definition()
        pipeline = job.run_tags.get("pipeline") or job.tags.get("pipeline")
        store = ControlPlane.of(settings).store()

        def order_for(tags: Mapping[str, str]) -> StepOrder | None:  # when the run starts
            return StepOrder.of(catalog, store, tags.get("pipeline") or pipeline, tags, names)

        return ThreadedExecutor(workers, order_for=order_for)

    return _threads


# The default executor of a code location holding several projects (each project's jobs carry
# their own): one object, so the projects' definitions merge. Asset runs launched from the
# graph execute on threads over one Spark, in Dagster's order.
SHARED_EXECUTOR = executor_for(None)
