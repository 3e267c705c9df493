"""``medallion run`` runs the days of the daily tables beside the tables that read none of them,
on one shared budget of worker slots, and the tables that read daily tables once every day and
each of their inputs beside is done; a table downstream of a daily table that failed is not
run, and says why, while the rest is built. On the crash tests' project (daily
``bronze.events`` -> ``gold.daily_events``, plain orders tables) with two plain tables added
that read the daily ones, on real Spark and a persistent instance (an ephemeral one's
in-memory storage cannot take two runs at once)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.headless import run_project
from medallion_assets.adapters.translator import step_table
from tests.adapters.faults.project import faults_project
from tests.adapters.test_faults import instance_home
from tests.e2e.test_pipeline import step_spans

pytestmark = pytest.mark.slow
READER_TABLES = ("gold.event_kinds", "gold.busiest_day")
# Fails at run time, on every day: Spark's assert_true raises on the first 'view' event.
FAILING_DAILY = (
    "SELECT event_date, kind, count(*) AS events FROM bronze.events "
    "WHERE assert_true(kind <> 'view') IS NULL GROUP BY event_date, kind\n"
)

READERS = {
    "gold/event_kinds.sql": "SELECT kind, count(*) AS events FROM bronze.events GROUP BY kind\n",
    "gold/busiest_day.sql": "SELECT max(events) AS events FROM gold.daily_events\n",
}


# A plain table beside the days that reads no daily table and none of the readers' inputs,
# and takes 20 s (Spark calls Thread.sleep once): the readers must not wait for it.
SLOW_BESIDE = {
    "gold/slow_orders.sql": "SELECT count(*) AS orders, max(slept) AS slept FROM bronze.orders "
    "CROSS JOIN (SELECT java_method('java.lang.Thread', 'sleep', CAST(20000 AS BIGINT)) AS slept)"
    " AS pause\n"
}


def project(
    where: Path, monkeypatch, daily_sql: str | None = None, more: dict[str, str] | None = None
) -> Path:
    root = faults_project(where)
    for path, text in {**READERS, **(more or {})}.items():
        (root / "sql" / path).write_text(text)
    if daily_sql is not None:
        (root / "sql" / "gold" / "daily_events.sql").write_text(daily_sql)
    monkeypatch.setenv("MEDALLION_HOME", str(root / ".medallion"))
    monkeypatch.setenv("MEDALLION_MAX_WORKERS", "2")
    for name in ("MEDALLION_LAKE", "MEDALLION_WAREHOUSE_URL", "MEDALLION_CONTROL_URL"):
        monkeypatch.delenv(name, raising=False)
    return root


def spans(instance: dg.DagsterInstance, run_ids: list[str]) -> list[tuple[float, float, str, str]]:
    """(start, end, table, partition or "") of every step of the runs, from the event log."""
    found = []
    for run_id in run_ids:
        run = instance.get_run_by_id(run_id)
        assert run is not None
        day = run.tags.get("dagster/partition", "")
        for key, (start, end) in step_spans(instance, run_id).items():
            found.append((start, end, step_table(key), day))
    return found


def test_the_days_run_beside_the_rest_and_their_readers_after_them(tmp_path, monkeypatch, spark):
    root = project(tmp_path, monkeypatch, more=SLOW_BESIDE)
    said: list[str] = []
    with dg.DagsterInstance.from_config(str(instance_home(tmp_path))) as instance:
        summary = run_project(root, log=said.append, instance=instance)
        steps = spans(instance, summary.run_ids)
    assert summary.success, summary.failed_steps
    assert {r.table for r in summary.having("built")} >= {"gold.event_kinds", "gold.busiest_day"}
    assert len(summary.run_ids) == 4  # two days, the tables beside them, their readers
    daily_end = max(end for _s, end, _t, day in steps if day)
    readers = [start for start, _e, table, _d in steps if table in READER_TABLES]
    assert len(readers) == 2 and min(readers) >= daily_end
    # ... but not after the run beside them: nothing they read is in it, so they start while
    # its slow table still runs
    (slow_end,) = [end for _s, end, table, _d in steps if table == "gold.slow_orders"]
    assert min(readers) < slow_end
    most = max(sum(1 for s, e, *_ in steps if s <= start < e) for start, *_ in steps)
    assert most <= 2  # the runs side by side share the two worker slots
    assert "materializing 2 table(s) that read daily tables ..." in said


def test_a_failed_daily_table_leaves_only_its_readers_out(tmp_path, monkeypatch, spark):
    root = project(tmp_path, monkeypatch, daily_sql=FAILING_DAILY)
    with dg.DagsterInstance.from_config(str(instance_home(tmp_path))) as instance:
        summary = run_project(root, log=lambda _line: None, instance=instance)
    status = {r.label: r.status for r in summary.results}
    assert status["gold.daily_events[2026-01-01]"] == "failed"
    assert status["gold.event_kinds"] == "built"  # reads bronze.events only, which was built
    assert status["gold.busiest_day"] == "not run"
    (left_out,) = [r for r in summary.results if r.table == "gold.busiest_day"]
    assert "an upstream table did not publish: gold.daily_events[2026-01-01]" in left_out.message
    assert status["gold.revenue"] == "built"  # the orders tables, beside the days
