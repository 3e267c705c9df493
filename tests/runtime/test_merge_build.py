"""MERGE INTO files built on real Spark over several versions of their source, each published
version compared with the same MERGE statement run by DuckDB on the same rows."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.lake import Lake
from medallion_assets.runtime.merge import MergeConflict, MergeNotRunnable
from medallion_assets.runtime.table_build import build_table
from medallion_assets.runtime.table_run import TableRun
from medallion_assets.testing import read_table
from tests.lake_helpers import publish_frame

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"

pytestmark = pytest.mark.slow

# Every clause kind: a conditional delete, UPDATE SET *, INSERT *, and both NOT MATCHED BY
# SOURCE forms; the target's columns come from INSERT * (the source's) on the first build.
STAR_MERGE = """
MERGE INTO silver.orders_current t
USING (SELECT order_id, amount, country FROM bronze.orders) s
ON t.order_id = s.order_id
WHEN MATCHED AND s.amount < 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED AND s.country <> 'XX' THEN INSERT *
WHEN NOT MATCHED BY SOURCE AND t.country = 'FR' THEN DELETE
WHEN NOT MATCHED BY SOURCE THEN UPDATE SET amount = 0
"""

# Explicit lists, expressions reading both sides, a condition on the target, an unqualified
# source column in the values, and a clause order where the first match wins.
LIST_MERGE = """
MERGE INTO silver.order_totals AS t
USING bronze.orders AS s
ON t.order_id = s.order_id
WHEN MATCHED AND t.times_seen >= 2 THEN DELETE
WHEN MATCHED AND s.amount > 100 THEN UPDATE SET amount = s.amount, times_seen = t.times_seen + 1,
    country = lower(s.country)
WHEN MATCHED THEN UPDATE SET times_seen = t.times_seen + 1
WHEN NOT MATCHED AND amount >= 0 THEN INSERT (order_id, country, amount, times_seen)
    VALUES (order_id, upper(s.country), s.amount * 2, 1)
"""

# Written for PostgreSQL (a ::cast, DO NOTHING) and transpiled to Spark; a positional INSERT
# VALUES fills the columns the named INSERT gave the table on its first build.
POSTGRES_MERGE = """-- dialect: postgres
MERGE INTO silver.order_sums t
USING bronze.orders s
ON t.order_id = s.order_id
WHEN MATCHED AND s.amount = 0 THEN DO NOTHING
WHEN MATCHED THEN UPDATE SET amount = t.amount + s.amount::DECIMAL(18,2)
WHEN NOT MATCHED AND s.amount > 100 THEN INSERT VALUES (s.order_id, s.amount * 10, 'BIG')
WHEN NOT MATCHED THEN INSERT (order_id, amount, country) VALUES (s.order_id, s.amount, s.country)
"""
TABLES = ("orders_current", "order_totals", "order_sums")


@pytest.fixture
def merge_project(tmp_path: Path):
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    (root / "sql" / "silver" / "orders_current.sql").write_text(STAR_MERGE)
    (root / "sql" / "silver" / "order_totals.sql").write_text(LIST_MERGE)
    (root / "sql" / "silver" / "order_sums.sql").write_text(POSTGRES_MERGE)
    catalog = load_catalog(root, use_cache=False)
    return catalog, Lake.local(tmp_path / "lake")


def publish_bronze(spark, lake: Lake, rows: list[tuple[int, str, str]]) -> None:
    """Publish a version of bronze.orders holding ``rows`` (order_id, amount, country)."""
    frame = spark.createDataFrame(
        [(i, Decimal(a), c, None, "s3://x/a.jsonl", "b1") for i, a, c in rows],
        "order_id bigint, amount decimal(18,2), country string, _ingested_at timestamp, "
        "_source_file string, _batch_id string",
    )
    publish_frame(lake, spark, frame, "bronze.orders", "test", {})


def duckdb_merges(statements: list[str]):
    """A DuckDB database with bronze.orders, and a function running one source version through
    each MERGE (verbatim), returning each target's rows sorted."""
    db = duckdb.connect()
    db.execute("CREATE SCHEMA bronze; CREATE SCHEMA silver")
    db.execute("CREATE TABLE bronze.orders (order_id BIGINT, amount DECIMAL(18,2), country TEXT)")
    db.execute(
        "CREATE TABLE silver.orders_current (order_id BIGINT, amount DECIMAL(18,2), country TEXT)"
    )
    db.execute(
        "CREATE TABLE silver.order_totals (order_id BIGINT, country TEXT, amount DECIMAL(18,2), "
        "times_seen INTEGER)"
    )
    db.execute(
        "CREATE TABLE silver.order_sums (order_id BIGINT, amount DECIMAL(18,2), country TEXT)"
    )

    def run(rows: list[tuple[int, str, str]]) -> dict[str, list[tuple]]:
        db.execute("DELETE FROM bronze.orders")
        if rows:
            db.executemany("INSERT INTO bronze.orders VALUES (?, ?, ?)", rows)
        for statement in statements:
            db.execute(statement)
        return {
            table: sorted(db.execute(f"SELECT * FROM silver.{table}").fetchall())
            for table in TABLES
        }

    return run


def spark_rows(lake: Lake, table: str) -> list[tuple]:
    frame = read_table(f"silver.{table}", lake_root=lake.root)
    frame = frame.astype(object).where(frame.notna(), None)
    return sorted(tuple(r) for r in frame.itertuples(index=False))


# Each version of the source: inserts; updates, deletes and rows not matched by source; an
# emptied source; rows back again.
SOURCE_VERSIONS = [
    [(1, "10.00", "DE"), (2, "20.00", "FR"), (3, "30.00", "GB"), (4, "5.00", "XX")],
    [(1, "150.00", "DE"), (2, "-1.00", "FR"), (5, "50.00", "FR"), (6, "-6.00", "DE")],
    [(1, "200.00", "GB"), (5, "55.00", "FR"), (7, "70.00", "XX"), (8, "800.00", "GB")],
    [],
    [(1, "1.00", "DE"), (3, "0.00", "GB"), (9, "9.00", "FR")],
]


def test_merge_tables_match_duckdb_over_several_source_versions(spark, merge_project):
    catalog, lake = merge_project
    reference = duckdb_merges([STAR_MERGE, LIST_MERGE, POSTGRES_MERGE])
    previous: dict[str, str] = {}
    for number, rows in enumerate(SOURCE_VERSIONS):
        publish_bronze(spark, lake, rows)
        expected = reference(rows)
        for table in TABLES:
            dataset = catalog.datasets[f"silver.{table}"]
            outcome = build_table(
                TableRun(spark=spark, lake=lake, catalog=catalog, dataset=dataset, checks=False)
            )
            assert not outcome.skipped
            assert spark_rows(lake, table) == expected[table], f"source version {number}"
            # Its own previous version is recorded as an input of the new one.
            assert outcome.version.inputs[dataset.name] == previous.get(table, "")
            previous[table] = outcome.version.version_id
    schema = read_table("silver.order_totals", lake_root=lake.root).columns.tolist()
    assert schema == ["order_id", "country", "amount", "times_seen"]


def test_a_merge_whose_code_and_source_are_unchanged_is_skipped(spark, merge_project):
    catalog, lake = merge_project
    dataset = catalog.datasets["silver.order_totals"]
    publish_bronze(spark, lake, SOURCE_VERSIONS[0])
    first = build_table(
        TableRun(spark=spark, lake=lake, catalog=catalog, dataset=dataset, checks=False)
    )
    again = build_table(
        TableRun(spark=spark, lake=lake, catalog=catalog, dataset=dataset, checks=False)
    )
    # Its own version changed since the last build (it is that build), but applying the same
    # source twice would count every order twice: unchanged sources mean nothing to do.
    assert again.skipped and again.version == first.version
    assert "unchanged" in again.reason
    publish_bronze(spark, lake, SOURCE_VERSIONS[0])
    third = build_table(
        TableRun(spark=spark, lake=lake, catalog=catalog, dataset=dataset, checks=False)
    )
    assert not third.skipped
    seen = read_table("silver.order_totals", lake_root=lake.root)["times_seen"]
    assert seen.tolist() == [2] * len(SOURCE_VERSIONS[0])


def test_a_target_row_matched_by_two_source_rows_fails_and_publishes_nothing(spark, merge_project):
    catalog, lake = merge_project
    dataset = catalog.datasets["silver.orders_current"]
    publish_bronze(spark, lake, SOURCE_VERSIONS[0])
    first = build_table(
        TableRun(spark=spark, lake=lake, catalog=catalog, dataset=dataset, checks=False)
    )
    duplicated = [(1, "11.00", "DE"), (1, "12.00", "DE")]
    publish_bronze(spark, lake, duplicated)
    with pytest.raises(MergeConflict, match=r"sql/silver/orders_current\.sql.*more than one"):
        build_table(
            TableRun(spark=spark, lake=lake, catalog=catalog, dataset=dataset, checks=False)
        )
    assert lake.current("silver.orders_current") == first.version
    # No DuckDB reference here: DuckDB 1.4 to 2.0 apply one of the two source rows silently,
    # where the SQL standard (and Spark's own MERGE, MERGE_CARDINALITY_VIOLATION) refuse.


def test_a_merge_naming_no_column_fails_its_first_build_naming_the_file(spark, tmp_path: Path):
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    (root / "sql" / "silver" / "positional.sql").write_text(
        "MERGE INTO silver.positional t USING bronze.orders s ON t.order_id = s.order_id "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.order_id, s.amount)"
    )
    catalog = load_catalog(root, use_cache=False)
    lake = Lake.local(tmp_path / "lake")
    publish_bronze(spark, lake, SOURCE_VERSIONS[0])
    with pytest.raises(MergeNotRunnable, match=r"sql/silver/positional\.sql: .*INSERT \(a, b\)"):
        build_table(
            TableRun(
                spark=spark,
                lake=lake,
                catalog=catalog,
                dataset=catalog.datasets["silver.positional"],
                checks=False,
            )
        )
    assert lake.current("silver.positional") is None
