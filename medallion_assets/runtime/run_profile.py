"""The profile a run executes under, and the tables its ``skip_below`` leaves out: the one
the run's ``medallion/profile`` tag names (every request the project makes carries one), else
the profile in force now for its pipeline. Without Dagster: the step guard asks it at each
table, the threaded executor for its order, ``medallion run`` for its plan."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from medallion_assets.catalog import Catalog
from medallion_assets.profiles.overrides import ProfileOverrides
from medallion_assets.profiles.priority import PROFILE_TAG
from medallion_assets.profiles.profiles import (
    ALL,
    RUN_TAG_SOURCE,
    EffectiveProfile,
    effective_profile,
)
from medallion_assets.simulate.scheduling import SchedulingPolicy

if TYPE_CHECKING:
    from medallion_assets.control.store import ControlStore

_policies: dict[tuple[int, str], tuple[Catalog, SchedulingPolicy]] = {}


def policy_of(catalog: Catalog, profile: str) -> SchedulingPolicy:
    """The policy of ``profile`` over ``catalog``, built once per catalog object (a step asks
    for it on every table; building it walks the whole graph)."""
    cached = _policies.get((id(catalog), profile))
    if cached is not None and cached[0] is catalog:
        return cached[1]
    profiles = catalog.profiles
    if profiles is None:
        raise ValueError(f"{catalog.root}: no metadata/profiles.yaml, no profile {profile!r}")
    policy = SchedulingPolicy.from_catalog(
        catalog, profiles.profiles[profile].settings, profile=profile
    )
    if len(_policies) > 64:
        _policies.clear()
    _policies[(id(catalog), profile)] = (catalog, policy)
    return policy


def in_force(
    catalog: Catalog, store: ControlStore, pipeline: str | None
) -> EffectiveProfile | None:
    """The profile in force now for a run of ``pipeline`` (None: the whole project, i.e. the
    override for ``all``, else ``active``); None when the project defines no profiles."""
    if catalog.profiles is None:
        return None
    return effective_profile(catalog.profiles, pipeline or ALL, ProfileOverrides(store).names())


def run_profile(
    catalog: Catalog, store: ControlStore, pipeline: str | None, tags: Mapping[str, str]
) -> EffectiveProfile | None:
    """The profile a run with ``tags`` executes under: the one its ``medallion/profile`` tag
    names, else (no tag, or a profile the file no longer defines) ``in_force`` now."""
    profiles = catalog.profiles
    if profiles is None:
        return None
    named = tags.get(PROFILE_TAG)
    if named is not None and named in profiles.profiles:
        return EffectiveProfile(pipeline or ALL, named, RUN_TAG_SOURCE)
    return in_force(catalog, store, pipeline)


def below_profile(
    catalog: Catalog,
    table: str,
    pipeline: str | None,
    store: ControlStore,
    tags: Mapping[str, str],
) -> str | None:
    """Why the profile the run executes under (``run_profile``) leaves ``table`` out
    (``skip_below``); None when it builds it."""
    effective = run_profile(catalog, store, pipeline, tags)
    profiles = catalog.profiles
    if effective is None or profiles is None or effective.settings(profiles).skip_below is None:
        return None
    reason = policy_of(catalog, effective.name).skipped([table]).get(table)
    return None if reason is None else f"profile {effective.describe()}: {reason}"
