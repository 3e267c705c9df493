"""Which profile a pipeline runs under: an override for the pipeline, then one for all, then
profiles.yaml's pipeline_profiles, then its active profile."""

from __future__ import annotations

import pytest

from medallion_assets.catalog.operations import Profile, ProfileSettings, ProfilesFile
from medallion_assets.profiles.profiles import ALL, check_override, effective_profile


def profiles() -> ProfilesFile:
    def profile(runs: int) -> Profile:
        return Profile(settings=ProfileSettings(max_concurrent_runs=runs))

    return ProfilesFile(
        active="balanced",
        profiles={"balanced": profile(6), "focus": profile(10), "night": profile(2)},
        pipeline_profiles={"core_daily": "focus"},
    )


@pytest.mark.parametrize(
    ("pipeline", "overrides", "name", "source"),
    [
        ("marketing", {}, "balanced", "active"),
        ("core_daily", {}, "focus", "pipeline_profiles"),
        ("marketing", {ALL: "focus"}, "focus", "override:all"),
        ("core_daily", {ALL: "night"}, "night", "override:all"),
        ("core_daily", {ALL: "night", "core_daily": "balanced"}, "balanced", "override:core_daily"),
        ("marketing", {"core_daily": "night"}, "balanced", "active"),
    ],
)
def test_the_most_specific_override_wins_then_the_file(pipeline, overrides, name, source):
    defined = profiles()
    effective = effective_profile(defined, pipeline, overrides)
    assert (effective.name, effective.source) == (name, source)
    assert effective.settings(defined) == defined.profiles[name].settings


def test_an_override_naming_a_profile_the_file_no_longer_defines_is_passed_over():
    effective = effective_profile(profiles(), "core_daily", {"core_daily": "removed"})
    assert (effective.name, effective.source) == ("focus", "pipeline_profiles")


def test_a_pipeline_profiles_entry_naming_an_undefined_profile_falls_back_to_active():
    broken = profiles().model_copy(update={"pipeline_profiles": {"core_daily": "gone"}})
    assert effective_profile(broken, "core_daily", {}).name == "balanced"


@pytest.mark.parametrize(
    ("pipeline", "profile", "problem"),
    [
        ("core_daily", "focus", None),
        (ALL, "night", None),
        ("core_daily", "default", None),
        ("nope", "focus", "unknown pipeline 'nope': name one of metadata/pipelines.yaml"),
        ("core_daily", "turbo", "unknown profile 'turbo': metadata/profiles.yaml defines"),
    ],
)
def test_an_override_must_name_a_known_pipeline_and_profile(pipeline, profile, problem):
    found = check_override(profiles(), ["core_daily", "fraud"], pipeline, profile)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_without_profiles_yaml_no_override_can_be_set():
    found = check_override(None, ["core_daily"], "core_daily", "focus")
    assert found is not None and "metadata/profiles.yaml" in found
