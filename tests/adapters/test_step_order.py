"""The order a run's steps start in and what it leaves out, under the profile its request named
(its medallion/profile tag), else the one in force when it starts: profiles.yaml, then an
operator's override in the control store."""

from __future__ import annotations

from pathlib import Path

from medallion_assets.adapters.step_order import StepOrder
from medallion_assets.adapters.translator import step_name
from medallion_assets.control_plane import ControlPlane
from medallion_assets.profiles.overrides import ProfileOverrides
from medallion_assets.profiles.priority import PROFILE_TAG, request_priority
from medallion_assets.runtime.run_profile import below_profile

LOW = "gold.daily_user_events"  # criticality low in the demo
CRITICAL = "gold.revenue_by_region"


def store_for(tmp_path: Path):
    return ControlPlane.from_env({"MEDALLION_HOME": str(tmp_path)}, tmp_path).store()


def order_of(demo_catalog, store, pipeline=None) -> list[str]:
    order = StepOrder.of(demo_catalog, store, pipeline)
    assert order is not None
    steps = [step_name(n) for n in demo_catalog.datasets]
    ranked = sorted(steps, key=lambda key: order.key(key, ()))
    return [order.tables[key] for key in ranked]


def test_focus_starts_critical_tables_and_their_upstream_first(demo_catalog, tmp_path):
    store = store_for(tmp_path)
    order = StepOrder.of(demo_catalog, store, "core_daily")
    assert order is not None and order.profile is not None
    assert order.profile.describe() == "focus (profiles.yaml: pipeline_profiles.core_daily)"
    ranked = order_of(demo_catalog, store, "core_daily")
    upstream = (
        demo_catalog.upstream_closure(CRITICAL)
        if hasattr(demo_catalog, "upstream_closure")
        else None
    )
    assert ranked.index("bronze.orders") < ranked.index(LOW)  # feeds the critical revenue mart
    assert ranked.index(CRITICAL) < ranked.index(LOW)
    assert upstream is None or all(ranked.index(u) < ranked.index(LOW) for u in upstream)


def test_focus_leaves_low_tables_out_and_an_override_changes_it_at_the_next_run(
    demo_catalog, tmp_path
):
    store = store_for(tmp_path)
    why = below_profile(demo_catalog, LOW, "core_daily", store, {})
    assert why is not None and "skip_below" in why and "focus" in why
    assert below_profile(demo_catalog, CRITICAL, "core_daily", store, {}) is None
    assert below_profile(demo_catalog, LOW, None, store, {}) is None  # the project: balanced
    ProfileOverrides(store).set("core_daily", "balanced", reason="incident over", changed_by="test")
    assert below_profile(demo_catalog, LOW, "core_daily", store, {}) is None
    order = StepOrder.of(demo_catalog, store, "core_daily")
    assert order is not None and order.profile is not None and order.profile.name == "balanced"
    assert StepOrder.of(demo_catalog, store, None).skipped(demo_catalog.datasets) == {}


def test_a_system_at_its_limit_holds_its_next_step(demo_catalog, tmp_path):
    order = StepOrder.of(demo_catalog, store_for(tmp_path), None)
    assert order is not None
    vendor = [n for n in demo_catalog.datasets if "s3_vendor" in order.policy.systems(n)]
    assert vendor, "the demo reads the vendor's bucket"
    limit = order.policy.limits["s3_vendor"]
    running = [step_name(vendor[0])] * limit  # the vendor's bucket full
    assert not order.may_start(step_name(vendor[0]), running)
    assert order.may_start(step_name(vendor[0]), [])
    # balanced keeps one slot for critical work: a high table may not take the last one
    assert demo_catalog.datasets[vendor[0]].criticality != "critical"
    assert not order.may_start(step_name(vendor[0]), running[:1])
    blocked = order.key(step_name(vendor[0]), running)
    assert blocked > order.key(step_name("bronze.orders"), running)  # startable ones first


def test_the_profile_a_request_named_decides_the_order_and_the_skips(demo_catalog, tmp_path):
    """One decision per request: a run tagged focus runs as focus whatever is in force when it
    starts, and a whole-project request takes the profile for all, not core_daily's."""
    store = store_for(tmp_path)
    whole = request_priority(demo_catalog, list(demo_catalog.datasets), "all", {})
    assert (whole.profile, whole.source) == ("balanced", "balanced (profiles.yaml: active)")
    assert whole.priority == 3  # balanced's priority for the project's most critical table
    order = StepOrder.of(demo_catalog, store, None, whole.tags())
    assert order is not None and order.profile is not None and order.profile.name == "balanced"
    assert below_profile(demo_catalog, LOW, None, store, whole.tags()) is None

    focus = {PROFILE_TAG: "focus"}
    ProfileOverrides(store).set(
        "all", "balanced", reason="changed after the request", changed_by="t"
    )
    order = StepOrder.of(demo_catalog, store, None, focus)
    assert order is not None and order.profile is not None
    assert order.profile.describe() == "focus (the run's medallion/profile tag)"
    why = below_profile(demo_catalog, LOW, None, store, focus)
    assert why is not None and "skip_below" in why
    # a tag naming a profile the file no longer defines: the profile in force now
    order = StepOrder.of(demo_catalog, store, None, {PROFILE_TAG: "gone"})
    assert order is not None and order.profile is not None and order.profile.name == "balanced"
