"""A `medallion run` starts steps only for what has something new: every table is asked
before any step (``TableRunner.unchanged``); with nothing new no Dagster run is launched, the
freshness is judged again and recorded in Dagster as a check evaluation, and the warehouse's
load is checked; after a landing only its readers get steps; anything off (a table switched
off, a warehouse that lost rows) and every table runs as before."""

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

REFUNDS = """
  refunds:
    system: s3_raw
    bucket: minimal-raw
    prefix: refunds/
    format: jsonl
    columns:
      - {name: refund_id, type: bigint, nullable: false}
"""
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
    with (root / "metadata" / "sources.yaml").open("a") as sources:  # a source of its own
        sources.write(REFUNDS)
    (root / "sql" / "bronze" / "refunds.sql").write_text(
        "SELECT refund_id, _ingested_at FROM raw.refunds\n"
    )
    store.put("minimal-raw", "refunds/a.jsonl", b'{"refund_id": 1}\n')
    assert "4 built" in medallion(root, "run")
    runs, judged = runs_and_freshness(root)

    idle = medallion(root, "run")
    assert "nothing new: 4 table(s) and day(s) unchanged" in idle
    assert "nothing changed: 4 unchanged; 0 rows written" in idle and "0 run(s)" in idle
    assert "checks 5 passed / 0 failed" in idle  # those recorded, freshness judged now
    again, judged_again = runs_and_freshness(root)
    assert again == runs  # no Dagster run
    assert judged_again > judged  # recorded in Dagster, against the latest materialization
    audit = ControlPlane.from_env({}, root).store().audit(entities=["project:minimal"])
    assert audit[-1].message.startswith("nothing new: 4 table(s)")

    # A landed object: steps for what reads it, none for the rest.
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "FR"})
    )
    landed = medallion(root, "run")
    assert "1 table(s) and day(s) unchanged, no step started for them" in landed
    assert "[3/3] gold.revenue" in landed and "3 built, 1 unchanged" in landed, landed
    assert runs_and_freshness(root)[0] > again

    # A table switched off: the runs go, and say so.
    medallion(root, "control", "disable", "gold.revenue", "--reason", "test")
    off = medallion(root, "run")
    assert "nothing new" not in off and "DISABLED" in off and "gold.revenue" in off
    medallion(root, "control", "enable", "gold.revenue", "--reason", "test")

    # The warehouse lost rows: its reconciliation, judged again, fails the table's step.
    warehouse = duckdb.connect(str(root / ".medallion" / "warehouse.duckdb"))
    warehouse.execute("DELETE FROM analytics.revenue")
    warehouse.close()
    lost = medallion(root, "run", exit_code=1)
    assert "[1/1] gold.revenue" in lost and "reconciliation" in lost
