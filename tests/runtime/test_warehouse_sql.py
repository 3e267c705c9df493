"""The warehouse statements as text: what PostgreSQL and DuckDB run in test_warehouse.py, and what
Redshift would run (no Redshift is reachable from the tests)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from medallion_assets.runtime import warehouse_sql as sql

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
    assert sql.sql_type(arrow_type, "postgres") == postgres
    assert sql.sql_type(arrow_type, "redshift") == redshift
    assert sql.sql_type(arrow_type, "duckdb") == duckdb


def test_types_without_a_warehouse_home_name_the_column():
    with pytest.raises(ValueError, match=r"column 'payload'.*binary.*cast it"):
        sql.sql_type(pa.binary(), "postgres", "payload")
    with pytest.raises(ValueError, match="at most 38 digits"):
        sql.sql_type(pa.decimal256(50, 2), "redshift", "big")


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
    assert sql.replace_statements("mart.orders", "stage", ["id", "amount"]) == [
        'DELETE FROM "mart"."orders"',
        'INSERT INTO "mart"."orders" ("id", "amount") SELECT "id", "amount" FROM "stage"',
    ]


def test_append_only_inserts():
    assert sql.append_statements("orders", "stage", ["id"]) == [
        'INSERT INTO "orders" ("id") SELECT "id" FROM "stage"'
    ]


def test_merge_deletes_matching_keys_using_the_temp_table_then_inserts():
    statements = sql.merge_statements(
        "mart.orders", "stage", ["region", "id"], ["region", "id", "x"]
    )
    assert statements == [
        'DELETE FROM "mart"."orders" USING "stage" '
        'WHERE "orders"."region" = "stage"."region" AND "orders"."id" = "stage"."id"',
        'INSERT INTO "mart"."orders" ("region", "id", "x") SELECT "region", "id", "x" FROM "stage"',
    ]


def test_merge_needs_keys_that_are_columns():
    with pytest.raises(ValueError, match="needs keys"):
        sql.merge_statements("mart.orders", "stage", [], ["id"])
    with pytest.raises(ValueError, match=r"merge key\(s\) day"):
        sql.merge_statements("mart.orders", "stage", ["day"], ["id"])


def test_apply_statements_picks_the_mode():
    assert sql.apply_statements("append", "a.b", "t", ["x"]) == sql.append_statements(
        "a.b", "t", ["x"]
    )
    with pytest.raises(ValueError, match="unknown load mode 'upsert'"):
        sql.apply_statements("upsert", "a.b", "t", ["x"])


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
        sql.arrow_columns(schema, "postgres")


def test_duplicate_columns_are_rejected():
    schema = pa.schema([("id", pa.int64()), ("id", pa.string())])
    with pytest.raises(ValueError, match="duplicate column"):
        sql.arrow_columns(schema, "duckdb")


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
