"""Kill-switch evaluation on TheWorldShop: which tables a flag switches off, and why."""

from __future__ import annotations

from medallion_assets.catalog.operations import ControlFlag
from medallion_assets.control.store import FlagOverride
from medallion_assets.kill_switch.switch import disabled_tables, effective_flags


def off(scope: str, name: str, reason: str = "incident") -> FlagOverride:
    return FlagOverride(scope, name, False, reason, "oncall", "2026-11-21T10:00:00.000000Z")


def test_control_yaml_alone_enables_everything_in_the_demo(demo_catalog):
    flags = effective_flags(demo_catalog.control_flags, [])
    assert disabled_tables(demo_catalog, flags) == {}
    assert flags[("layer", "gold")].origin == "control.yaml"


def test_a_store_override_wins_over_control_yaml_in_both_directions(demo_catalog):
    yaml_off = ControlFlag(scope="dataset", name="gold.customer_ltv", enabled=False, reason="y")
    flags = effective_flags([yaml_off], [off("dataset", "gold.fraud_features")])
    assert set(disabled_tables(demo_catalog, flags)) == {"gold.customer_ltv", "gold.fraud_features"}
    back_on = FlagOverride("dataset", "gold.customer_ltv", True, "fixed", "oncall", "t")
    flags = effective_flags([yaml_off], [back_on])
    assert disabled_tables(demo_catalog, flags) == {}
    assert flags[("dataset", "gold.customer_ltv")].origin == "control store"


def test_each_scope_switches_off_its_tables(demo_catalog):
    def disabled(*flags: FlagOverride, **kw) -> set[str]:
        return set(disabled_tables(demo_catalog, effective_flags([], flags), **kw))

    gold = {n for n, d in demo_catalog.datasets.items() if d.layer == "gold"}
    assert disabled(off("layer", "gold")) == gold
    assert disabled(off("source", "customers")) == {"bronze.customers"}
    assert disabled(off("target", "gold.revenue_by_region")) == {"gold.revenue_by_region"}
    # A pipeline flag stops the tables of runs of that pipeline only.
    assert disabled(off("pipeline", "fraud")) == set()
    fraud = set(demo_catalog.pipeline_datasets("fraud"))
    assert disabled(off("pipeline", "fraud"), pipelines=["fraud"]) == fraud
    assert disabled(off("layer", "gold"), tables=["silver.orders_usd", "gold.customer_ltv"]) == {
        "gold.customer_ltv"
    }


def test_the_reason_names_the_flag_its_origin_who_and_why(demo_catalog):
    flags = effective_flags([], [off("source", "orders", "S3 SlowDown storm")])
    (table,) = disabled_tables(demo_catalog, flags).values()
    assert table.describe() == (
        "bronze.orders is disabled by source:orders (control store by oncall at "
        "2026-11-21T10:00:00.000000Z): S3 SlowDown storm"
    )


def test_in_a_run_of_no_one_pipeline_a_table_stops_when_every_pipeline_building_it_is_off(
    demo_catalog,
):
    def disabled(*flags: FlagOverride) -> set[str]:
        return set(disabled_tables(demo_catalog, effective_flags([], flags), by_membership=True))

    pipelines = {p: set(demo_catalog.pipeline_datasets(p)) for p in demo_catalog.pipelines}
    others = set().union(*(t for p, t in pipelines.items() if p != "core_daily"))
    only_core = pipelines["core_daily"] - others
    assert only_core and pipelines["core_daily"] & others  # the demo has both kinds
    stopped = disabled(off("pipeline", "core_daily"))
    assert stopped == only_core  # bronze.orders is also the ingest pipeline's: it still runs
    assert "gold.revenue_by_region" in stopped and "bronze.orders" not in stopped
    assert disabled(*(off("pipeline", p) for p in pipelines)) == set().union(*pipelines.values())
    in_none = set(demo_catalog.datasets) - set().union(*pipelines.values())
    assert not in_none & disabled(*(off("pipeline", p) for p in pipelines))
    flags = effective_flags([], [off("pipeline", "core_daily")])
    table = disabled_tables(demo_catalog, flags, by_membership=True)["gold.revenue_by_region"]
    assert table.describe().startswith("gold.revenue_by_region is disabled by pipeline:core_daily")
