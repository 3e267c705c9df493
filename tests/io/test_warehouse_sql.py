"""The warehouse statements as text: what PostgreSQL and DuckDB run in test_warehouse.py, and what
Redshift would run (no Redshift is reachable from the tests)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from medallion_assets.io import warehouse_sql as sql
from medallion_assets.io import warehouse_types

ROLE = "arn:aws:iam::123456789012:role/redshift-load"


@pytest.mark.parametrize(
    ("arrow_type", "postgres", "redshift", "duckdb"),
    [
        (pa.int64(), "BIGINT", "BIGINT", "BIGINT"),
        (pa.int32(), "INTEGER", "INTEGER", "INTEGER"),
        (pa.int16(), "SMALLINT", "SMALLINT", "SMALLINT"),
        (pa.float64(), "DOUBLE PRECISION", "DOUBLE PRECISION", "DOUBLE PRECISION"),
        (pa.float32(), "REAL", "REAL", "REAL"),
        (pa.decimal128(18, 2), "DECIMAL(18,2)", "DECIMAL(18,2)", "DECIMAL(18,2)"),
        (pa.string(), "VARCHAR", "VARCHAR(65535)", "VARCHAR"),
        (pa.large_string(), "VARCHAR", "VARCHAR(65535)", "VARCHAR"),
        (pa.string_view(), "VARCHAR", "VARCHAR(65535)", "VARCHAR"),
        (pa.null(), "VARCHAR", "VARCHAR(65535)", "VARCHAR"),
        (pa.uint64(), "DECIMAL(20,0)", "DECIMAL(20,0)", "DECIMAL(20,0)"),
        (pa.dictionary(pa.int32(), pa.string()), "VARCHAR", "VARCHAR(65535)", "VARCHAR"),
        (pa.bool_(), "BOOLEAN", "BOOLEAN", "BOOLEAN"),
        (pa.date32(), "DATE", "DATE", "DATE"),
        (pa.timestamp("us"), "TIMESTAMP", "TIMESTAMP", "TIMESTAMP"),
        (pa.timestamp("ns", tz="UTC"), "TIMESTAMPTZ", "TIMESTAMPTZ", "TIMESTAMPTZ"),
        (pa.list_(pa.string()), "VARCHAR", "SUPER", "VARCHAR"),
        (pa.struct([("a", pa.int64())]), "VARCHAR", "SUPER", "VARCHAR"),
        (pa.map_(pa.string(), pa.int64()), "VARCHAR", "SUPER", "VARCHAR"),
    ],
)
def test_arrow_types_map_to_warehouse_types(arrow_type, postgres, redshift, duckdb):
    assert warehouse_types.sql_type(arrow_type, "postgres") == postgres
    assert warehouse_types.sql_type(arrow_type, "redshift") == redshift
    assert warehouse_types.sql_type(arrow_type, "duckdb") == duckdb


def test_types_without_a_warehouse_home_name_the_column():
    with pytest.raises(ValueError, match=r"column 'payload'.*binary.*cast it"):
        warehouse_types.sql_type(pa.binary(), "postgres", "payload")
    with pytest.raises(ValueError, match="at most 38 digits"):
        warehouse_types.sql_type(pa.decimal256(50, 2), "redshift", "big")


def test_create_table_adds_distkey_and_sortkey_only_on_redshift():
    columns = [("order_id", "BIGINT"), ("region", "VARCHAR(65535)")]
    redshift = sql.create_table(
        "mart.orders", columns, "redshift", dist_key="region", sort_keys=("order_id", "region")
    )
    assert redshift == (
        'CREATE TABLE IF NOT EXISTS "mart"."orders" ("order_id" BIGINT, "region" VARCHAR(65535)) '
        'DISTKEY("region") SORTKEY("order_id", "region")'
    )
    postgres = sql.create_table(
        "mart.orders", [("order_id", "BIGINT")], "postgres", dist_key="order_id", sort_keys=("x",)
    )
    assert postgres == 'CREATE TABLE IF NOT EXISTS "mart"."orders" ("order_id" BIGINT)'


def test_redshift_keys_must_be_columns():
    with pytest.raises(ValueError, match=r"sort key 'day' of 'mart\.orders' is not a column"):
        sql.create_table("mart.orders", [("id", "BIGINT")], "redshift", sort_keys=("day",))


def test_temp_table_has_the_data_columns_in_order_typed_like_the_target():
    statement = sql.create_temp_like("_stage_orders_1", "mart.orders", ["b", "a"], "redshift", "a")
    assert statement == (
        'CREATE TEMP TABLE "_stage_orders_1" DISTKEY("a") AS '
        'SELECT "b", "a" FROM "mart"."orders" WHERE 1 = 0'
    )
    assert "DISTKEY" not in sql.create_temp_like("t", "mart.orders", ["a"], "postgres", "a")


def test_copy_from_s3_loads_parquet_with_the_iam_role():
    assert sql.copy_from_s3("_stage_orders_1", "s3://staging/loads/x/", ROLE) == (
        f"COPY \"_stage_orders_1\" FROM 's3://staging/loads/x/' IAM_ROLE '{ROLE}' FORMAT AS PARQUET"
    )
    nested = sql.copy_from_s3("t", "s3://staging/x/", ROLE, serialize_json=True)
    assert nested.endswith("FORMAT AS PARQUET SERIALIZETOJSON")


@pytest.mark.parametrize(
    ("uri", "role", "message"),
    [
        ("s3://staging/x'; DROP TABLE y; --", ROLE, "not a safe s3:// URI"),
        ("https://staging/x/", ROLE, "not a safe s3:// URI"),
        ("s3://staging/x/", "arn:aws:iam::123:role/x' --", "IAM role ARN"),
        ("s3://staging/x/\n", ROLE, "not a safe s3:// URI"),
        ("s3://staging/x/", ROLE + "\n", "IAM role ARN"),
    ],
)
def test_copy_from_s3_refuses_unsafe_literals(uri, role, message):
    with pytest.raises(ValueError, match=message):
        sql.copy_from_s3("t", uri, role)


def test_replace_deletes_everything_then_inserts_named_columns():
    assert sql.load_statements("replace", "mart.orders", "stage", ["id", "amount"]) == [
        'DELETE FROM "mart"."orders"',
        'INSERT INTO "mart"."orders" ("id", "amount") SELECT "id", "amount" FROM "stage"',
    ]


def test_append_without_partitions_only_inserts():
    assert sql.load_statements("append", "orders", "stage", ["id"]) == [
        'INSERT INTO "orders" ("id") SELECT "id" FROM "stage"'
    ]


@pytest.mark.parametrize("mode", ["replace", "append"])
def test_a_partition_load_replaces_exactly_the_rows_of_its_day(mode):
    scope = sql.partition_scope("event_date", "2026-01-02")
    assert sql.load_statements(mode, "mart.events", "stage", ["event_date", "n"], (), scope) == [
        """DELETE FROM "mart"."events" WHERE CAST("event_date" AS DATE) = DATE '2026-01-02'""",
        'INSERT INTO "mart"."events" ("event_date", "n") SELECT "event_date", "n" FROM "stage"',
    ]


def test_a_partition_merge_deletes_the_day_and_the_staged_keys():
    scope = sql.partition_scope("day", "2026-01-02")
    statements = sql.load_statements("merge", "mart.orders", "stage", ["day", "id"], ["id"], scope)
    assert statements[:2] == [
        """DELETE FROM "mart"."orders" WHERE CAST("day" AS DATE) = DATE '2026-01-02'""",
        'DELETE FROM "mart"."orders" USING "stage" WHERE "orders"."id" = "stage"."id"',
    ]


@pytest.mark.parametrize("day", ["2026-1-2", "2026-01-02' OR '1'='1", "", None, "2026-01-02\n"])
def test_a_partition_scope_takes_only_a_day(day):
    with pytest.raises(ValueError, match="is not a day"):
        sql.partition_scope("event_date", day)


def test_merge_deletes_matching_keys_using_the_temp_table_then_inserts():
    statements = sql.load_statements(
        "merge", "mart.orders", "stage", ["region", "id", "x"], ["region", "id"]
    )
    assert statements == [
        'DELETE FROM "mart"."orders" USING "stage" '
        'WHERE "orders"."region" = "stage"."region" AND "orders"."id" = "stage"."id"',
        'INSERT INTO "mart"."orders" ("region", "id", "x") SELECT "region", "id", "x" FROM "stage"',
    ]


def test_merge_needs_keys_that_are_columns():
    with pytest.raises(ValueError, match="needs keys"):
        sql.load_statements("merge", "mart.orders", "stage", ["id"], [])
    with pytest.raises(ValueError, match=r"merge key\(s\) day"):
        sql.load_statements("merge", "mart.orders", "stage", ["id"], ["day"])
    with pytest.raises(ValueError, match="unknown load mode 'upsert'"):
        sql.load_statements("upsert", "a.b", "t", ["x"])


def test_the_ledger_lives_beside_its_table_and_quotes_its_values():
    assert sql.ledger_table("mart.orders") == "mart.medallion_loads"
    assert sql.ledger_table("orders") == "medallion_loads"
    delete, insert = sql.ledger_entry(
        "mart.orders", "2026-01-02", "gold.orders", "v1'x", 5, "2026-01-02T00:00:00Z", "run"
    )
    assert delete == (
        'DELETE FROM "mart"."medallion_loads" WHERE warehouse_table = \'mart.orders\' '
        "AND partition_key = '2026-01-02'"
    )
    assert "'v1''x', 5," in insert
    assert sql.ledger_entry("o", None, "g.o", "v", 1, "t", "r", keep_others=True) == [
        'INSERT INTO "medallion_loads" ("warehouse_table", "partition_key", "lake_table", '
        '"lake_version", "rows_loaded", "loaded_at", "run_id") '
        "VALUES ('o', '', 'g.o', 'v', 1, 't', 'r')"
    ]
    with pytest.raises(ValueError, match="cannot be written as a SQL literal"):
        sql.literal("a\x00b")


def test_duplicate_keys_are_counted_in_scope():
    assert sql.count_duplicate_keys("mart.t", ["a", "b"], "x = 1") == (
        'SELECT COUNT(*) FROM (SELECT "a", "b" FROM "mart"."t" WHERE x = 1 '
        'GROUP BY "a", "b" HAVING COUNT(*) > 1) AS repeated'
    )


@pytest.mark.parametrize(
    "name",
    ["Orders", "mart.Orders", "mart.orders\n", "orders\n;", 'mart."orders"',
     "mart.orders; drop table x", "a.b.c", "", "1abc", "mart.", "x" * 64],
)  # fmt: skip
def test_unsafe_table_names_are_rejected(name):
    with pytest.raises(ValueError, match=r"warehouse table|longer than 63"):
        sql.quote_table(name)


@pytest.mark.parametrize("column", ["Amount", "order id", 'a"b', "é", "1st"])
def test_unsafe_column_names_say_how_to_fix_them(column):
    schema = pa.schema([("id", pa.int64()), (column, pa.string())])
    with pytest.raises(ValueError, match=r"not a safe warehouse identifier.*rename the column"):
        warehouse_types.arrow_columns(schema, "postgres")


def test_duplicate_columns_are_rejected():
    schema = pa.schema([("id", pa.int64()), ("id", pa.string())])
    with pytest.raises(ValueError, match="duplicate column"):
        warehouse_types.arrow_columns(schema, "duckdb")


def test_hand_written_column_types_cannot_smuggle_sql():
    with pytest.raises(ValueError, match="not a column type"):
        sql.create_table("a.b", [("id", "BIGINT); DROP TABLE x; --")], "postgres")


def test_counts_and_catalog_queries():
    assert sql.count_rows("mart.orders") == 'SELECT COUNT(*) FROM "mart"."orders"'
    assert sql.count_matched("mart.orders", "stage", ["id"]) == (
        'SELECT COUNT(*) FROM "mart"."orders" JOIN "stage" ON "orders"."id" = "stage"."id"'
    )
    assert "table_schema = current_schema()" in sql.table_columns("orders")
    assert "table_schema = 'mart' AND table_name = 'orders'" in sql.table_columns("mart.orders")
    assert sql.create_schema("orders") is None
    assert sql.copy_from_stdin("stage", ["a", "b"]) == (
        'COPY "stage" ("a", "b") FROM STDIN (FORMAT csv)'
    )


def test_temp_table_names_stay_valid_for_long_tables():
    name = sql.temp_table_name("mart." + "t" * 63, "0123abcd")
    assert name.startswith("_stage_ttt") and name.endswith("_0123abcd") and len(name) <= 63
