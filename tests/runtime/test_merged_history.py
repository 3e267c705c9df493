"""A merge table's history names the rows each version holds: a MERGE writes merge-on-read,
so its replaced rows stay in the data files, named by position deletes, and the snapshot's
``total-records`` counts them too (``medallion table history`` showed 3 rows for a table of
2). Real Spark and Iceberg."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_assets.lake import Lake
from tests.runtime.small_project import small_project
from tests.runtime.test_merge_keys import FILES, TABLE, build, land

pytestmark = pytest.mark.slow

LATEST = {
    **FILES,
    # One row per order: a re-exported order replaces its row.
    "sql/silver/orders_amounts.sql": "SELECT order_id, max(amount) AS amount FROM bronze.orders "
    "GROUP BY order_id\n",
}


def test_a_merged_versions_history_counts_its_rows_not_the_rows_it_replaced(spark, tmp_path: Path):
    catalog, _ = small_project(tmp_path, "merged-history", LATEST)
    lake = Lake.local(tmp_path / "lake")
    land(spark, lake, "a", [1, 2])
    build(catalog, lake, spark)
    land(spark, lake, "b", [1])  # order 1 again: its row is replaced
    assert build(catalog, lake, spark).metadata["built"].startswith("merged 1 recomputed rows")
    held = lake.read_current(spark, TABLE).count()
    newest = lake.history(TABLE)[0]
    assert (held, newest.rows, lake.current(TABLE).rows) == (2, 2, 2)
