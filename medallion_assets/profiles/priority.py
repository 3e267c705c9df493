"""The priority a run request carries: from the profile in force for its pipeline and the most
critical table it materializes (the profile's ``criticality_priority``).

Dagster's queued run coordinator starts queued runs highest ``dagster/priority`` first;
``medallion/profile`` names the profile, so the instance can cap each profile's concurrent runs
and the pre-emption sensor can read the profile a queued run was requested under. Every request
the project makes (schedules, sensors, relaunches, backfills, ``medallion run``) gets both tags,
computed when the request is made: an operator's ``medallion control profile`` changes the next
one.

A request without a pipeline (a source sensor's bronze table) runs under the profile of the
pipelines holding its tables that gives it the highest priority; a table no pipeline holds, and
a request for the whole project (``pipeline`` is ``all``: ``medallion run``), runs under the
override for ``all``, else ``active``. The profile a request names in ``medallion/profile`` is
the one its run executes under: the step order and ``skip_below`` read it from the run's tags.

>>> from medallion_assets.catalog.operations import Profile, ProfileSettings, ProfilesFile
>>> focus = ProfileSettings(max_concurrent_runs=2, criticality_priority={"critical": 10})
>>> profiles = ProfilesFile(
...     active="balanced",
...     profiles={
...         "balanced": Profile(settings=ProfileSettings(max_concurrent_runs=4)),
...         "focus": Profile(settings=focus),
...     },
... )
>>> run_priority(profiles, ["low", "critical"], {"p": "balanced"}).tags()
{'dagster/priority': '3', 'medallion/profile': 'balanced'}
>>> run_priority(profiles, ["critical"], {"p": "focus"}).priority
10
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.operations import ProfilesFile
from medallion_assets.profiles.profiles import ALL, effective_profile

PRIORITY_TAG = "dagster/priority"  # what Dagster's queued run coordinator sorts by
PROFILE_TAG = "medallion/profile"
# "yes": the project's queue keeps the run queued (a tag limit of 0), a focus run claiming a
# system it needs (relaunch.preemption.holds); "no": released.
HOLD_TAG = "medallion/held"
# A project without profiles.yaml: every request the same, as Dagster's own default.
NO_PROFILE = "none"


@dataclass(frozen=True)
class RunPriority:
    """The priority of one run request and the profile it comes from."""

    profile: str
    priority: int
    source: str = ""  # how the profile was chosen (EffectiveProfile.describe), for messages

    def tags(self) -> dict[str, str]:
        return {PRIORITY_TAG: str(self.priority), PROFILE_TAG: self.profile}


def run_priority(
    profiles: ProfilesFile | None,
    criticalities: Iterable[str],
    pipeline_profiles: Mapping[str, str],
) -> RunPriority:
    """The highest priority any of ``pipeline_profiles`` (pipeline -> profile in force) gives the
    most critical of ``criticalities``; ties go to the first pipeline. No pipeline: ``active``."""
    if profiles is None:
        return RunPriority(NO_PROFILE, 0, "no metadata/profiles.yaml")
    levels = set(criticalities)
    best = RunPriority(profiles.active, _highest(profiles, profiles.active, levels), "active")
    for n, (pipeline, name) in enumerate(pipeline_profiles.items()):
        priority = _highest(profiles, name, levels)
        if n == 0 or priority > best.priority:
            best = RunPriority(name, priority, pipeline)
    return best


def _highest(profiles: ProfilesFile, profile: str, levels: Collection[str]) -> int:
    table = profiles.profiles[profile].settings.criticality_priority
    return max((p for level, p in table.items() if level in levels), default=0)


def request_priority(
    catalog: Catalog,
    tables: Collection[str],
    pipeline: str | None,
    overrides: Mapping[str, str],
) -> RunPriority:
    """The priority of a request for ``tables`` of ``pipeline`` (None: the pipelines holding
    them; ``all``: the whole project), with ``overrides`` (pipeline or ``all`` -> profile) from
    the control store."""
    profiles = catalog.profiles
    levels = [catalog.datasets[t].criticality for t in tables if t in catalog.datasets]
    if profiles is None:
        return run_priority(None, levels, {})
    if pipeline == ALL:
        owners = []
    elif pipeline is not None and pipeline in catalog.pipelines:
        owners = [pipeline]
    else:
        owners = [p for p in catalog.pipelines if set(catalog.pipeline_datasets(p)) & set(tables)]
    in_force = {p: effective_profile(profiles, p, overrides) for p in owners}
    if not in_force:
        in_force = {ALL: effective_profile(profiles, ALL, overrides)}
    chosen = run_priority(profiles, levels, {p: e.name for p, e in in_force.items()})
    how = in_force[chosen.source].describe() if chosen.source in in_force else chosen.source
    return RunPriority(chosen.profile, chosen.priority, how)
