"""A ``merge`` table's keys must be unique in its SQL's output: a build that makes a key twice
is refused in one line naming the file, the table and the fix, and publishes nothing, whether
it is the table's first build (in full, read back from the staged snapshot) or an incremental
one (the recomputed rows, before the MERGE). Real Spark and Iceberg."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from medallion_assets.checks.results import ChecksFailed
from medallion_assets.lake import Lake, Produced
from medallion_assets.runtime.incremental import DuplicateKeys
from medallion_assets.runtime.table_build import build_table
from medallion_assets.runtime.table_run import TableRun
from tests.runtime.small_project import small_project

pytestmark = pytest.mark.slow

FILES = {
    "metadata/sources.yaml": (
        "sources:\n  orders: {system: s3_raw, bucket: raw, prefix: orders/, format: jsonl, "
        "columns: [{name: order_id, type: bigint, nullable: false}, "
        '{name: amount, type: "decimal(18,2)"}]}\n'
    ),
    "metadata/datasets.yaml": """
datasets:
  silver.orders_amounts: {kind: merge, keys: [order_id]}
""",
    "sql/bronze/orders.sql": "SELECT order_id, amount, _ingested_at, _source_file, _batch_id "
    "FROM raw.orders",
    # Every export of an order: a re-exported order makes its key twice.
    "sql/silver/orders_amounts.sql": "SELECT order_id, amount FROM bronze.orders\n",
}
SCHEMA = (
    "order_id bigint, amount decimal(18,2), _ingested_at timestamp, _source_file string, "
    "_batch_id string"
)
TABLE = "silver.orders_amounts"


def land(spark, lake: Lake, name: str, ids: list[int]) -> None:
    """One object of orders appended to bronze.orders, as ingest publishes it."""
    rows = [(i, Decimal(i), datetime(2026, 1, 1), name, "b") for i in ids]
    frame = spark.createDataFrame(rows, SCHEMA)
    lake.publish(spark, lake.stage(spark, frame, "bronze.orders", Produced("b"), mode="append"))


def build(catalog, lake: Lake, spark):
    run = TableRun(catalog=catalog, dataset=catalog.datasets[TABLE], lake=lake, spark=spark)
    return build_table(run.without_checks())


def refused(catalog, lake: Lake, spark) -> str:
    with pytest.raises(DuplicateKeys) as error:
        build(catalog, lake, spark)
    said = str(error.value)
    assert "\n" not in said
    assert said.startswith(f"sql/silver/orders_amounts.sql: {TABLE}: 1 key(s) (order_id) ")
    assert f"set kind full for {TABLE} in metadata/datasets.yaml" in said
    return said


def test_a_first_build_making_a_key_twice_is_refused_and_publishes_nothing(spark, tmp_path: Path):
    catalog, lake = small_project(tmp_path, "merge_keys", FILES)
    land(spark, lake, "a", [1, 2])
    land(spark, lake, "b", [2])  # order 2 re-exported
    said = refused(catalog, lake, spark)
    assert "order_id" in said and "2" in said
    assert lake.current(TABLE) is None
    assert lake.refs_of(TABLE).keys() <= {"main"}  # no staging branch left


def test_an_incremental_build_making_a_key_twice_is_refused_and_keeps_the_version(
    spark, tmp_path: Path
):
    catalog, lake = small_project(tmp_path, "merge_keys", FILES)
    land(spark, lake, "a", [1, 2])
    first = build(catalog, lake, spark)
    land(spark, lake, "b", [3])
    second = build(catalog, lake, spark)
    assert second.metadata["built"].startswith("merged 1 recomputed rows")
    land(spark, lake, "c", [1])  # order 1 re-exported: its key is recomputed as two rows
    refused(catalog, lake, spark)
    assert lake.current(TABLE) == second.version != first.version
    rows = sorted(tuple(r) for r in lake.read_current(spark, TABLE).collect())
    assert rows == [(1, Decimal("1.00")), (2, Decimal("2.00")), (3, Decimal("3.00"))]


def test_a_blocking_unique_rule_on_the_keys_blocks_a_first_build_that_makes_a_key_twice(
    spark, tmp_path: Path
):
    """The checks judge the keys' uniqueness themselves: the build is blocked by the rule
    (its output kept as rejected), not read again for the same answer."""
    files = dict(FILES)
    files["metadata/datasets.yaml"] = (
        f"datasets:\n  {TABLE}:\n    kind: merge\n    keys: [order_id]\n"
        "    rules:\n      - {kind: unique, columns: [order_id]}\n"
    )
    catalog, lake = small_project(tmp_path, "merge_keys", files)
    land(spark, lake, "a", [1, 2])
    land(spark, lake, "b", [2])
    run = TableRun(catalog=catalog, dataset=catalog.datasets[TABLE], lake=lake, spark=spark)
    with pytest.raises(ChecksFailed, match=r"1 blocking check\(s\) failed"):
        build_table(run)
    assert lake.current(TABLE) is None
