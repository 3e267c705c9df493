"""A `medallion run` with nothing new launches no Dagster run: every table is found unchanged
before any step (``TableRunner.unchanged``), its freshness is judged again and recorded in
Dagster as a check evaluation, and the warehouse's load is checked; anything new or anything
off (an object landed, a table switched off, a warehouse that lost rows) and the runs go as
before."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import pytest
from click.testing import CliRunner

from medallion_assets.adapters.instance import project_instance
from medallion_assets.cli import cli
from medallion_assets.control_plane import ControlPlane
from tests.adapters.minimal import minimal_project, orders

pytestmark = pytest.mark.slow

RULES = """
  bronze.orders:
    rules:
      - {kind: freshness, max_age_hours: 1}
  gold.revenue:
    rules:
      - {kind: reconciliation}
"""


def medallion(root: Path, *args: str, exit_code: int = 0) -> str:
    result = CliRunner().invoke(cli, [*args, "--project", str(root)])
    assert result.exit_code == exit_code, result.output
    return result.output


def runs_and_freshness(root: Path) -> tuple[int, float]:
    """(Dagster runs of the project's instance, when bronze.orders' freshness was last judged)."""
    key = dg.AssetCheckKey(dg.AssetKey(["bronze", "orders"]), "freshness")
    with project_instance(root) as instance:
        record = instance.get_latest_asset_check_evaluation_record(key)
        assert record is not None and record.event is not None
        return instance.get_runs_count(), record.event.timestamp


def test_a_run_with_nothing_new_starts_no_dagster_run_and_anything_new_runs_as_before(
    spark, tmp_path, monkeypatch
):
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "DE"}
    )
    with (root / "metadata" / "datasets.yaml").open("a") as datasets:
        datasets.write(RULES)
    assert "3 built" in medallion(root, "run")
    runs, judged = runs_and_freshness(root)

    idle = medallion(root, "run")
    assert "nothing new: 3 table(s) and day(s) unchanged" in idle
    assert "nothing changed: 3 unchanged; 0 rows written" in idle and "0 run(s)" in idle
    assert "checks 5 passed / 0 failed" in idle  # those recorded, freshness judged now
    again, judged_again = runs_and_freshness(root)
    assert again == runs  # no Dagster run
    assert judged_again > judged  # recorded in Dagster, against the latest materialization
    audit = ControlPlane.from_env({}, root).store().audit(entities=["project:minimal"])
    assert audit[-1].message.startswith("nothing new: 3 table(s)")

    # A landed object: the runs go, and build what it changes.
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "FR"})
    )
    landed = medallion(root, "run")
    assert "nothing new" not in landed and "3 built" in landed
    assert runs_and_freshness(root)[0] > again

    # A table switched off: the runs go, and say so.
    medallion(root, "control", "disable", "gold.revenue", "--reason", "test")
    off = medallion(root, "run")
    assert "nothing new" not in off and "DISABLED" in off and "gold.revenue" in off
    medallion(root, "control", "enable", "gold.revenue", "--reason", "test")

    # The warehouse lost rows: its reconciliation, judged again, fails the run.
    warehouse = duckdb.connect(str(root / ".medallion" / "warehouse.duckdb"))
    warehouse.execute("DELETE FROM analytics.revenue")
    warehouse.close()
    lost = medallion(root, "run", exit_code=1)
    assert "nothing new" not in lost and "reconciliation" in lost
