"""The backfill preview: what a backfill over some days rebuilds downstream (each daily table
for its days, each other table once), the warehouse rows it reloads, the exposures it touches
and its simulated time, worked out by hand on the demo."""

from __future__ import annotations

from datetime import date

import pytest

from medallion_assets.backfill.plan import parse_range, preview_backfill


def test_a_backfill_rebuilds_the_days_downstream_and_says_what_it_reloads(demo_catalog):
    durations = dict.fromkeys(demo_catalog.datasets, 10.0)
    loaded = {
        ("gold.daily_user_events", "2026-01-01"): 7,
        ("gold.daily_user_events", "2026-01-02"): 5,
        ("gold.daily_user_events", "2025-12-31"): 100,  # outside the range
        ("gold.fraud_features", ""): 40,
    }
    preview = preview_backfill(
        demo_catalog,
        ["bronze.user_events"],
        date(2026, 1, 1),
        date(2026, 1, 3),
        loaded,
        durations,
    )
    days = ("2026-01-01", "2026-01-02", "2026-01-03")
    assert preview.tables == (
        ("bronze.user_events", days),
        ("silver.user_events", days),
        ("gold.daily_user_events", days),
        ("gold.fraud_features", ()),
    )
    assert preview.builds == 10
    assert {r.table: r.rows for r in preview.reloads} == {
        "gold.daily_user_events": 12,
        "gold.fraud_features": 40,
    }
    assert set(preview.exposures) == {"fraud_model", "growth_weekly_report"}
    # the three days side by side (a chain of 3 x 10 s each), except that the warehouse
    # (redshift: 3 loads at once, 1 kept for critical work) takes two of the gold days at a
    # time: the third waits 10 s; then the table without days
    limits = demo_catalog.systems["redshift"].throttle.max_concurrent_jobs
    assert limits == 3
    assert preview.simulated_s == 30 + 10 + 10
    assert preview.as_dict()["warehouse_rows"] == 52


def test_days_before_a_tables_start_are_not_rebuilt(demo_catalog):
    start = demo_catalog.datasets["bronze.user_events"].settings.partitions.start
    preview = preview_backfill(
        demo_catalog, ["bronze.user_events"], date(start.year - 1, 1, 1), start, {}, {}
    )
    assert dict(preview.tables)["bronze.user_events"] == (start.isoformat(),)


def test_a_range_and_a_table_must_make_sense(demo_catalog):
    assert parse_range("2026-01-01...2026-01-07") == (date(2026, 1, 1), date(2026, 1, 7))
    assert parse_range("2026-01-01") == (date(2026, 1, 1), date(2026, 1, 1))
    with pytest.raises(ValueError, match="ends before it starts"):
        parse_range("2026-01-07...2026-01-01")
    with pytest.raises(ValueError, match=r"is not FROM\.\.\.TO"):
        parse_range("yesterday")
    with pytest.raises(ValueError, match=r"no table named 'gold\.nope'"):
        preview_backfill(demo_catalog, ["gold.nope"], date(2026, 1, 1), date(2026, 1, 1), {}, {})
