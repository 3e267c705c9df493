"""Which profile a pipeline runs under: an operator's override in the control store, else
``profiles.yaml`` (the pipeline's own entry in ``pipeline_profiles``, then ``active``).

An override names one pipeline or ``all``; one for the pipeline wins over one for ``all``, and
either wins over the file, so ``medallion control profile all focus`` during an incident puts
every pipeline in focus at the next tick, and clearing it gives each its own profile back.

>>> from medallion_assets.catalog.operations import Profile, ProfileSettings, ProfilesFile
>>> plain = Profile(settings=ProfileSettings(max_concurrent_runs=2))
>>> profiles = ProfilesFile(
...     active="balanced",
...     profiles={"balanced": plain, "focus": plain},
...     pipeline_profiles={"core_daily": "focus"},
... )
>>> effective_profile(profiles, "marketing", {}).describe()
'balanced (profiles.yaml: active)'
>>> effective_profile(profiles, "core_daily", {}).describe()
'focus (profiles.yaml: pipeline_profiles.core_daily)'
>>> effective_profile(profiles, "core_daily", {ALL: "balanced"}).describe()
'balanced (control store override for all pipelines)'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from medallion_assets.catalog.operations import ProfileSettings, ProfilesFile

ALL = "all"  # an override for every pipeline
RUN_TAG_SOURCE = "run tag"  # the profile a run's request named (its medallion/profile tag)
DEFAULT = "default"  # the override's profile name that clears it


@dataclass(frozen=True)
class EffectiveProfile:
    """The profile in force for one pipeline, and where that comes from."""

    pipeline: str
    name: str
    source: str  # "override:<pipeline>", "override:all", "pipeline_profiles", "active", "run tag"

    def describe(self) -> str:
        if self.source == f"override:{ALL}":
            origin = "control store override for all pipelines"
        elif self.source.startswith("override:"):
            origin = "control store override"
        elif self.source == RUN_TAG_SOURCE:
            origin = "the run's medallion/profile tag"
        elif self.source == "pipeline_profiles":
            origin = f"profiles.yaml: pipeline_profiles.{self.pipeline}"
        else:
            origin = "profiles.yaml: active"
        return f"{self.name} ({origin})"

    def settings(self, profiles: ProfilesFile) -> ProfileSettings:
        return profiles.profiles[self.name].settings


def effective_profile(
    profiles: ProfilesFile, pipeline: str, overrides: Mapping[str, str]
) -> EffectiveProfile:
    """The profile ``pipeline`` runs under. ``overrides`` maps a pipeline (or ``all``) to the
    profile an operator set; an override naming a profile the file no longer defines is
    passed over (the file changed after it was set), so a run never starts without settings."""
    for key in (pipeline, ALL):
        name = overrides.get(key)
        if name is not None and name in profiles.profiles:
            return EffectiveProfile(pipeline, name, f"override:{key}")
    own = profiles.pipeline_profiles.get(pipeline)
    if own is not None and own in profiles.profiles:
        return EffectiveProfile(pipeline, own, "pipeline_profiles")
    return EffectiveProfile(pipeline, profiles.active, "active")


def check_override(
    profiles: ProfilesFile | None, pipelines: Iterable[str], pipeline: str, profile: str
) -> str | None:
    """Why ``medallion control profile PIPELINE PROFILE`` cannot be set (None: it can)."""
    if profiles is None:
        return "the project has no metadata/profiles.yaml: define the profiles there first"
    known = sorted(pipelines)
    if pipeline != ALL and pipeline not in known:
        return (
            f"unknown pipeline {pipeline!r}: name one of metadata/pipelines.yaml "
            f"({', '.join(known) or 'none defined'}) or {ALL!r}"
        )
    if profile != DEFAULT and profile not in profiles.profiles:
        return (
            f"unknown profile {profile!r}: metadata/profiles.yaml defines "
            f"{', '.join(sorted(profiles.profiles))}; {DEFAULT!r} clears the override"
        )
    return None
