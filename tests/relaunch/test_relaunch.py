"""What the run-failure sensor re-launches, on TheWorldShop's graph: only unfinished tables,
never one that failed in its step nor what builds on it, nor a switched-off one, nor past its
limit; and which failures count as outside the steps."""

from __future__ import annotations

from medallion_assets.relaunch.relaunch import failed_outside_steps, relaunch_plan


def plan(catalog, planned, **overrides):
    arguments = {
        "done": set(),
        "failed_in_step": set(),
        "disabled": {},
        "attempt": 1,
        "limits": dict.fromkeys(planned, 2),
    } | overrides
    return relaunch_plan(catalog, planned, **arguments)


def test_only_the_unfinished_tables_are_relaunched_in_catalog_order(demo_catalog):
    planned = ["gold.revenue_by_region", "silver.orders_usd", "bronze.orders"]
    result = plan(demo_catalog, planned, done={"bronze.orders"})
    order = list(demo_catalog.datasets)
    assert set(result.tables) == {"silver.orders_usd", "gold.revenue_by_region"}
    assert list(result.tables) == sorted(result.tables, key=order.index)
    assert result.left_out == {}


def test_a_table_that_failed_in_its_step_and_its_downstream_are_left_alone(demo_catalog):
    planned = ["bronze.orders", "silver.orders_usd", "gold.revenue_by_region", "bronze.fx_rates"]
    result = plan(demo_catalog, planned, failed_in_step={"silver.orders_usd"})
    assert (
        "silver.orders_usd" not in result.tables and "gold.revenue_by_region" not in result.tables
    )
    assert (
        result.left_out["silver.orders_usd"] == "failed inside its step (its own retries decided)"
    )
    assert result.left_out["gold.revenue_by_region"].startswith("downstream of silver.orders_usd")
    assert set(result.tables) == {"bronze.orders", "bronze.fx_rates"}


def test_switched_off_tables_and_exhausted_limits_are_left_out_with_the_reason(demo_catalog):
    planned = ["bronze.orders", "bronze.fx_rates", "bronze.customers"]
    result = plan(
        demo_catalog,
        planned,
        disabled={"bronze.fx_rates": "dataset:bronze.fx_rates is disabled"},
        attempt=2,
        limits={"bronze.orders": 3, "bronze.fx_rates": 3, "bronze.customers": 1},
    )
    assert result.tables == ("bronze.orders",)
    assert result.left_out == {
        "bronze.fx_rates": "switched off: dataset:bronze.fx_rates is disabled",
        "bronze.customers": "relaunch limit reached (1 retries)",
    }


def test_a_run_failed_outside_its_steps_unless_a_step_failed_on_its_own():
    assert failed_outside_steps(None, set())  # the process died: Dagster recorded no reason
    assert failed_outside_steps("UNEXPECTED_TERMINATION", set())
    assert failed_outside_steps("RUN_WORKER_RESTART", set())
    assert not failed_outside_steps("STEP_FAILURE", set())
    assert failed_outside_steps("STEP_FAILURE", {"silver.orders_usd"})  # interrupted, not failed
