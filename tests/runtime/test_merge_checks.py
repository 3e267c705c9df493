"""An incremental build's checks on real Spark and Iceberg: a row-by-row rule its last version
passed with no failing row is judged on the rows the build changed alone (a MERGE's recomputed
rows, an append's rows read back from the staged snapshot), and says so; every result is the
one a check of the whole table gives; a rule the last version failed, and every rule that is
not row by row, reads the whole table; a bad changed row still blocks the publish."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from medallion_assets.checks.results import CheckContext, ChecksFailed
from medallion_assets.checks.validation import validate_frame
from medallion_assets.control.store import ControlStore
from medallion_assets.lake import Produced
from medallion_assets.runtime import spark_jobs, table_build
from medallion_assets.runtime.table_build import build_table
from medallion_assets.runtime.table_run import TableRun
from tests.runtime.small_project import small_project

pytestmark = pytest.mark.slow

FILES = {
    "metadata/sources.yaml": """
sources:
  orders:
    system: s3_raw
    bucket: raw
    prefix: orders/
    format: jsonl
    columns:
      - {name: order_id, type: bigint, nullable: false}
      - {name: updated_at, type: timestamp}
      - {name: amount, type: "decimal(18,2)"}
      - {name: country, type: string}
""",
    "metadata/datasets.yaml": """
datasets:
  silver.orders_latest:
    kind: merge
    keys: [order_id]
    rules:
      - {kind: not_null, columns: [amount], severity: warn}
      - {kind: range, column: amount, min: 0}
      - {kind: accepted_values, column: country, values: [DE, FR]}
      - {kind: unique, columns: [order_id]}
      - {kind: row_count, min: 1}
  silver.order_events:
    kind: append
    rules:
      - {kind: not_null, columns: [amount], severity: warn}
      - {kind: range, column: amount, min: 0}
      - {kind: accepted_values, column: country, values: [DE, FR]}
""",
    "sql/bronze/orders.sql": (
        "SELECT order_id, updated_at, amount, country, _ingested_at, _source_file, _batch_id "
        "FROM raw.orders"
    ),
    "sql/silver/orders_latest.sql": """
WITH ranked AS (
    SELECT order_id, updated_at, amount, country,
        row_number() OVER (PARTITION BY order_id ORDER BY updated_at DESC) AS rn
    FROM bronze.orders
)
SELECT order_id, updated_at, amount, country FROM ranked WHERE rn = 1
""",
    "sql/silver/order_events.sql": (
        "SELECT order_id, updated_at, amount, country FROM bronze.orders"
    ),
}
SCHEMA = (
    "order_id bigint, updated_at timestamp, amount decimal(18,2), country string, "
    "_ingested_at timestamp, _source_file string, _batch_id string"
)
TABLE = "silver.orders_latest"
START = datetime(2026, 1, 1)


def land(spark, lake, rows: list[tuple[int, int, str | None, str]], hour: int) -> None:
    """One object of (order id, amount in cents or None, country) re-exports, ``hour`` later."""
    when = START + timedelta(hours=hour)
    values = [
        (i, when, None if cents is None else Decimal(cents) / 100, country, when, f"o{hour}", "b")
        for i, cents, country in rows
    ]
    frame = spark.createDataFrame(values, SCHEMA)
    staged = lake.stage(spark, frame, "bronze.orders", Produced("b"), mode="append")
    lake.publish(spark, staged)


@pytest.fixture
def built(spark, tmp_path: Path):
    catalog, lake = small_project(tmp_path, "merge_checks", FILES)
    control = ControlStore.open(f"sqlite:///{tmp_path / 'control.db'}")

    def build(table: str = TABLE):
        dataset = catalog.datasets[table]
        run = TableRun(catalog=catalog, dataset=dataset, lake=lake, spark=spark, control=control)
        return build_table(run)

    # 40 orders; order 7 has no amount: the warn rule fails on it and the build publishes
    land(spark, lake, [(i, None if i == 7 else 100 * i, "DE") for i in range(1, 41)], 0)
    return catalog, lake, build


def whole_table(spark, catalog, lake, table: str = TABLE) -> dict[str, tuple[bool, int, int]]:
    """Each rule's (passed, failing rows, total rows) checked on the whole published table."""
    dataset = catalog.datasets[table]
    context = CheckContext(lambda: spark, lake, catalog, dataset)
    found = validate_frame(lake.read_current(spark, table), context)
    return {r.name: (r.passed, r.failing_rows, r.total_rows) for r in found.results}


def test_a_merge_checks_its_recomputed_rows_for_the_rules_its_last_version_passed(spark, built):
    catalog, lake, build = built
    first = build()
    assert first.metadata["built"].startswith("in full")
    assert not any("checked" in r.details for r in first.validation.results)
    # three orders re-exported, one of them new: a merge of four recomputed rows
    land(spark, lake, [(3, 333, "FR"), (12, 1200, "DE"), (41, 4100, "FR")], 1)
    second = build()
    assert second.metadata["built"].startswith("merged 3 recomputed rows")
    results = {r.name: r for r in second.validation.results}
    on_change = {n for n, r in results.items() if "checked" in r.details}
    # row by row, or unique on the MERGE's keys, and passed clean before: on the change; the
    # warn rule failed before (order 7), row_count is the table's: the whole table
    assert on_change == {"range_amount", "accepted_values_country", "unique_order_id"}
    assert whole_table(spark, catalog, lake) == {
        n: (r.passed, r.failing_rows, r.total_rows) for n, r in results.items()
    }
    assert results["not_null_amount"].failing_rows == 1  # the kept row, counted still
    assert results["range_amount"].total_rows == 41

    # a recomputed row out of range blocks the publish, counted as on the whole table
    before = lake.current(TABLE, None)
    land(spark, lake, [(5, -500, "DE"), (41, 4200, "XX")], 2)
    with pytest.raises(ChecksFailed) as failed:
        build()
    results = {r.name: r for r in failed.value.validation.results}
    assert (results["range_amount"].passed, results["range_amount"].failing_rows) == (False, 1)
    assert results["accepted_values_country"].failing_rows == 1
    assert "checked" in results["range_amount"].details
    assert lake.current(TABLE, None) == before


def test_the_rules_on_the_changed_rows_are_judged_beside_those_on_the_whole_table(
    spark, built, monkeypatch
):
    """Two frames, two threads: the changed rows' rules run on the thread ``beside`` starts
    while the whole table's run on the step's, and the results are those of one thread."""
    catalog, lake, build = built
    build()
    threads: list[str] = []

    def recorded(session, work):
        def judged():
            threads.append(threading.current_thread().name)
            return work()

        return spark_jobs.beside(session, judged)

    monkeypatch.setattr(table_build, "beside", recorded)
    land(spark, lake, [(3, 333, "FR"), (41, 4100, "FR")], 1)
    second = build()
    assert threads and all(name.endswith("-beside") for name in threads), threads
    results = {r.name: r for r in second.validation.results}
    assert {n for n, r in results.items() if "checked" in r.details} == {
        "range_amount",
        "accepted_values_country",
        "unique_order_id",
    }
    assert whole_table(spark, catalog, lake) == {
        n: (r.passed, r.failing_rows, r.total_rows) for n, r in results.items()
    }


def test_an_append_checks_the_rows_it_appended_read_back_from_its_snapshot(spark, built):
    catalog, lake, build = built
    table = "silver.order_events"
    assert build(table).metadata["built"].startswith("in full")
    land(spark, lake, [(3, 333, "FR"), (41, 4100, "FR")], 1)
    second = build(table)
    assert second.metadata["built"].startswith("appended 2 rows")
    results = {r.name: r for r in second.validation.results}
    assert {n for n, r in results.items() if "checked" in r.details} == {
        "range_amount",
        "accepted_values_country",
    }
    assert whole_table(spark, catalog, lake, table) == {
        n: (r.passed, r.failing_rows, r.total_rows) for n, r in results.items()
    }
    before = lake.current(table, None)
    land(spark, lake, [(5, -500, "DE")], 2)
    with pytest.raises(ChecksFailed) as failed:
        build(table)
    results = {r.name: r for r in failed.value.validation.results}
    assert (results["range_amount"].failing_rows, results["range_amount"].total_rows) == (1, 43)
    assert lake.current(table, None) == before
