"""The keys a table's versions differ by (``lake.changes.changed_keys``), on real Spark and Iceberg:
what incremental builds recompute and keyed warehouse loads stage."""

from __future__ import annotations

from typing import Any

import pytest

from medallion_assets.lake.changes import Changes, changed_keys

pytestmark = pytest.mark.slow

TABLE = "lake.silver.changed"
COLUMNS = "k BIGINT, a BIGINT, b BIGINT, m MAP<STRING, INT>"


def _snapshots(spark: Any) -> list[int]:
    rows = spark.sql(f"SELECT snapshot_id FROM {TABLE}.snapshots ORDER BY committed_at").collect()
    return [row.snapshot_id for row in rows]


def _keys(spark: Any, changes: Changes) -> list[int]:
    return sorted(row.k for row in changed_keys(spark, changes, ["k"]).collect())


def test_a_rewrite_names_every_key_whose_rows_differ_and_no_other(lake_spark: Any):
    spark = lake_spark
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.silver")
    spark.sql(f"CREATE TABLE {TABLE} ({COLUMNS}) USING iceberg")
    spark.sql(
        f"INSERT INTO {TABLE} VALUES (1, 1, 1, map('x', 1)), (2, NULL, 1, NULL), "
        "(3, 3, 3, NULL), (4, 4, 4, map('x', 1)), (5, 5, 5, NULL), (5, 5, 5, NULL), "
        "(8, 8, NULL, map('x', 1, 'y', 2))"
    )
    spark.sql(
        f"INSERT OVERWRITE {TABLE} VALUES (1, 1, 1, map('x', 1)), "
        "(2, 1, NULL, NULL), "  # the NULL moved to the other column: a different row
        "(4, 4, 4, map('x', 2)), "  # only a map's value changed
        "(5, 5, 5, NULL), "  # held twice, now once
        "(6, 6, 6, NULL), "  # new; 3 is gone
        "(8, 8, NULL, map('x', 1, 'y', 2))"
    )
    start, end = _snapshots(spark)
    rewrite = Changes("silver.changed", start, end, ((end, "overwrite"),))
    assert _keys(spark, rewrite) == [2, 3, 4, 5, 6]

    spark.sql(f"INSERT INTO {TABLE} VALUES (7, 7, 7, NULL)")
    appended = _snapshots(spark)[-1]
    assert _keys(spark, Changes("silver.changed", end, appended, ((appended, "append"),))) == [7]

    # Compared on the columns a reader reads alone (with the key): a row that changed only in
    # another column is the same row to it; one added, gone or changed in them is not.
    def read_a(changes: Changes) -> list[int]:
        return sorted(row.k for row in changed_keys(spark, changes, ["k"], ["a"]).collect())

    assert read_a(rewrite) == [2, 3, 5, 6]  # 4 changed only in m
    spark.sql(f"UPDATE {TABLE} SET b = b + 1 WHERE k = 1")
    spark.sql(f"UPDATE {TABLE} SET a = a + 1 WHERE k = 6")
    after = _snapshots(spark)[-1]
    updated = Changes("silver.changed", appended, after, ((after, "overwrite"),))
    assert read_a(updated) == [6] and _keys(spark, updated) == [1, 6]
