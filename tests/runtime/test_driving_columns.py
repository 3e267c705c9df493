"""An incremental build reads, of its driving input, only the columns its SQL names (and the
keys): a nested column it never names no longer keeps Iceberg from its vectorized reader. A
column the SQL names in any clause, or every column under a ``*``, is still read, and the
merged table equals a build in full. Real Spark and Iceberg for the build."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_assets.lake import Lake, Produced
from medallion_assets.lineage.read_columns import columns_spelled
from medallion_assets.lineage.spark_sql import view_name
from medallion_assets.lineage.statement import parse_statement
from medallion_assets.runtime.table_build import build_table
from medallion_assets.runtime.table_run import TableRun
from tests.runtime.small_project import small_project

COLUMNS = ["order_id", "status", "note", "items", "version", "order date"]


@pytest.mark.parametrize(
    ("sql", "read"),
    [
        ("SELECT order_id, status FROM bronze.orders", ["order_id", "status", "order date"]),
        # named only in a window, a filter, a comment, a lateral view
        (
            "SELECT order_id FROM (SELECT order_id, row_number() OVER (PARTITION BY order_id "
            "ORDER BY version DESC) AS n FROM bronze.orders WHERE status <> 'x') WHERE n = 1 "
            "-- keeps the note",
            ["order_id", "status", "note", "version", "order date"],
        ),
        (
            "SELECT order_id, l.qty FROM bronze.orders LATERAL VIEW explode(items) t AS l",
            ["order_id", "items", "order date"],
        ),
        ("SELECT * FROM bronze.orders", COLUMNS),
        ("SELECT o.*, 1 AS one FROM bronze.orders AS o", COLUMNS),
        ("SELECT order_id FROM bronze.orders NATURAL JOIN bronze.other", COLUMNS),
    ],
)
def test_the_columns_a_sql_may_read_of_its_driving_input(sql: str, read: list[str]):
    statement = parse_statement(sql, "spark", "silver.x")
    assert columns_spelled(statement, sql, "bronze.orders", COLUMNS) == read


FILES = {
    "metadata/sources.yaml": (
        "sources:\n  orders: {system: s3_raw, bucket: raw, prefix: orders/, format: jsonl, "
        "columns: [{name: order_id, type: bigint, nullable: false}, "
        "{name: version, type: int}, {name: status, type: string}]}\n"
    ),
    "metadata/datasets.yaml": """
datasets:
  silver.latest_orders: {kind: merge, keys: [order_id]}
""",
    "sql/bronze/orders.sql": "SELECT order_id, version, status, _ingested_at, _source_file, "
    "_batch_id FROM raw.orders",
    "sql/silver/latest_orders.sql": """
SELECT order_id, version, status
FROM (
    SELECT order_id, version, status,
           row_number() OVER (PARTITION BY order_id ORDER BY version DESC) AS rank
    FROM bronze.orders
)
WHERE rank = 1
""",
}
TABLE = "silver.latest_orders"


def land(spark, lake: Lake, rows: list[tuple[int, int, str]]) -> None:
    """One object of orders appended to bronze.orders, each with lines the SQL never names."""
    frame = spark.createDataFrame(
        [(o, v, s, [(o, v)], "a note", "f", "b") for o, v, s in rows],
        "order_id bigint, version int, status string, "
        "items array<struct<product_id:bigint,quantity:int>>, note string, "
        "_source_file string, _batch_id string",
    )
    lake.publish(spark, lake.stage(spark, frame, "bronze.orders", Produced("b"), mode="append"))


@pytest.mark.slow
def test_a_merge_increment_reads_the_named_columns_and_equals_a_build_in_full(
    spark, tmp_path: Path
):
    catalog, lake = small_project(tmp_path, "driving_columns", FILES)
    run = TableRun(catalog=catalog, dataset=catalog.datasets[TABLE], lake=lake, spark=spark)
    land(spark, lake, [(1, 1, "open"), (2, 1, "open")])
    assert build_table(run.without_checks()).metadata["built"] == "in full: its first build"
    land(spark, lake, [(2, 2, "shipped"), (3, 1, "open")])  # a re-export and a new order
    outcome = build_table(run.without_checks())
    assert outcome.metadata["built"].startswith("merged 2 recomputed rows")
    driving = spark.table(f"{view_name('bronze.orders')}__increment")
    assert sorted(driving.columns) == ["order_id", "status", "version"]
    merged = sorted(tuple(r) for r in lake.read(spark, [outcome.version]).collect())
    assert merged == [(1, 1, "open"), (2, 2, "shipped"), (3, 1, "open")]
