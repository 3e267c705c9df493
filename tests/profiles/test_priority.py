"""The priority a run request carries: the profile in force for its pipeline (an operator's
override, then profiles.yaml) applied to the most critical table it materializes."""

from __future__ import annotations

import dataclasses

from medallion_assets.catalog import Catalog
from medallion_assets.profiles.priority import (
    NO_PROFILE,
    PRIORITY_TAG,
    PROFILE_TAG,
    request_priority,
)
from medallion_assets.profiles.profiles import ALL


def test_a_pipeline_request_takes_its_profile_and_its_most_critical_table(demo_catalog: Catalog):
    tables = demo_catalog.pipeline_datasets("core_daily")  # critical marts, focus in the file
    chosen = request_priority(demo_catalog, tables, "core_daily", {})
    assert chosen.tags() == {PRIORITY_TAG: "10", PROFILE_TAG: "focus"}
    assert chosen.source == "focus (profiles.yaml: pipeline_profiles.core_daily)"

    analytics = demo_catalog.pipeline_datasets("analytics")  # low and normal, balanced (active)
    assert request_priority(demo_catalog, analytics, "analytics", {}).tags() == {
        PRIORITY_TAG: "1",
        PROFILE_TAG: "balanced",
    }


def test_an_operators_override_changes_the_priority_of_the_next_request(demo_catalog: Catalog):
    tables = demo_catalog.pipeline_datasets("core_daily")
    calm = request_priority(demo_catalog, tables, "core_daily", {"core_daily": "balanced"})
    assert (calm.profile, calm.priority) == ("balanced", 3)  # critical in balanced
    assert calm.source == "balanced (control store override)"
    fraud = demo_catalog.pipeline_datasets("fraud")
    everyone = request_priority(demo_catalog, fraud, "fraud", {ALL: "focus"})
    assert (everyone.profile, everyone.priority) == ("focus", 5)  # high in focus


def test_only_the_requested_tables_count(demo_catalog: Catalog):
    normal = [
        t
        for t in demo_catalog.pipeline_datasets("core_daily")
        if demo_catalog.datasets[t].criticality == "normal"
    ]
    assert normal
    assert request_priority(demo_catalog, normal, "core_daily", {}).priority == 1


def test_a_request_without_a_pipeline_gets_the_best_profile_of_the_pipelines_holding_it(
    demo_catalog: Catalog,
):
    # bronze.orders (high) is in ingest (balanced: 2) and core_daily (focus: 5)
    chosen = request_priority(demo_catalog, ["bronze.orders"], None, {})
    assert (chosen.profile, chosen.priority) == ("focus", 5)
    chosen = request_priority(demo_catalog, ["bronze.orders"], None, {"core_daily": "balanced"})
    assert (chosen.profile, chosen.priority) == ("balanced", 2)


def test_a_table_of_no_pipeline_runs_under_the_override_for_all_else_active(
    demo_catalog: Catalog,
):
    lonely = dataclasses.replace(demo_catalog, pipelines={})
    assert request_priority(lonely, ["bronze.orders"], None, {}).tags() == {
        PRIORITY_TAG: "2",
        PROFILE_TAG: "balanced",
    }
    chosen = request_priority(lonely, ["bronze.orders"], None, {ALL: "focus"})
    assert (chosen.profile, chosen.priority) == ("focus", 5)
    assert chosen.source == "focus (control store override for all pipelines)"


def test_a_project_without_profiles_gives_every_request_dagsters_default(demo_catalog: Catalog):
    plain = dataclasses.replace(demo_catalog, profiles=None)
    tables = plain.pipeline_datasets("core_daily")
    assert request_priority(plain, tables, "core_daily", {"core_daily": "focus"}).tags() == {
        PRIORITY_TAG: "0",
        PROFILE_TAG: NO_PROFILE,
    }
