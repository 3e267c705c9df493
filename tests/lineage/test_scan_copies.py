"""Statements that copy rows whole between tables and files, and files read as tables: a file
path is a node of its own, named as written."""

from __future__ import annotations

import pytest

from medallion_assets.lineage.analysis import SqlFile
from medallion_assets.lineage.scan import scan_files

SCHEMA = {"shop.orders": {"order_id": "bigint", "amount": "decimal(10,2)"}}


def scan(sql: str, dialect: str):
    return scan_files([SqlFile("f.sql", sql, dialect, "report")], schema=SCHEMA)


def columns(result) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in result.column_edges}


@pytest.mark.parametrize(
    ("dialect", "sql", "edge"),
    [
        ("redshift", "COPY shop.orders FROM 's3://Raw-Bucket/orders/' IAM_ROLE 'arn:x'", None),
        ("postgres", "COPY shop.orders FROM 's3://Raw-Bucket/orders/'", None),
        ("snowflake", "COPY INTO shop.orders FROM 's3://Raw-Bucket/orders/'", None),
        ("tsql", "COPY INTO shop.orders FROM 's3://Raw-Bucket/orders/'", None),
        ("spark", "SELECT * FROM parquet.`s3://Raw-Bucket/orders/`", "report"),
    ],
)
def test_files_loaded_or_read_are_a_node_named_as_written(dialect, sql, edge):
    result = scan(sql, dialect)
    assert result.errors == ()
    assert result.edges == (("s3://Raw-Bucket/orders/", edge or "shop.orders"),)


def test_a_table_copied_out_to_files_keeps_its_columns():
    result = scan("COPY INTO 's3://exports/orders/' FROM shop.orders", "snowflake")
    assert result.edges == (("shop.orders", "s3://exports/orders/"),)
    assert columns(result) == {
        ("shop.orders.order_id", "s3://exports/orders/.order_id"),
        ("shop.orders.amount", "s3://exports/orders/.amount"),
    }


def test_a_query_copied_to_a_file_gives_the_querys_columns():
    result = scan("COPY (SELECT o.order_id FROM shop.orders o) TO '/tmp/ids.csv'", "postgres")
    assert columns(result) == {("shop.orders.order_id", "/tmp/ids.csv.order_id")}


def test_unload_reads_the_query_in_its_string():
    sql = (
        "UNLOAD ('SELECT o.order_id, o.amount AS total FROM shop.orders o WHERE o.x = ''y''') "
        "TO 's3://exports/big_' IAM_ROLE 'arn:aws:iam::1:role/R'"
    )
    result = scan(sql, "redshift")
    assert result.errors == ()
    assert columns(result) == {
        ("shop.orders.order_id", "s3://exports/big_.order_id"),
        ("shop.orders.amount", "s3://exports/big_.total"),
    }


def test_insert_overwrite_directory_writes_the_folder():
    sql = "INSERT OVERWRITE DIRECTORY 'hdfs://nn/Out' SELECT order_id FROM shop.orders"
    result = scan(sql, "spark")
    assert result.edges == (("shop.orders", "hdfs://nn/Out"),)
    assert columns(result) == {("shop.orders.order_id", "hdfs://nn/Out.order_id")}


@pytest.mark.parametrize(
    ("dialect", "sql"),
    [
        ("snowflake", "CREATE TABLE shop.orders_copy CLONE shop.orders"),
        ("spark", "CREATE TABLE shop.orders_copy LIKE shop.orders"),
    ],
)
def test_clone_and_like_take_the_tables_columns(dialect, sql):
    result = scan(sql, dialect)
    assert result.edges == (("shop.orders", "shop.orders_copy"),)
    assert columns(result) == {
        ("shop.orders.order_id", "shop.orders_copy.order_id"),
        ("shop.orders.amount", "shop.orders_copy.amount"),
    }


def test_a_clone_inside_a_script_is_traced_not_passed_over():
    sql = "DROP TABLE IF EXISTS b; CREATE TABLE b CLONE shop.orders; INSERT INTO c SELECT * FROM b"
    result = scan(sql, "snowflake")
    assert set(result.edges) == {("shop.orders", "b"), ("b", "c")}


def test_tsql_statements_without_semicolons_are_read_one_by_one():
    sql = "insert into mart.a select * from raw.x\ninsert into mart.b select * from raw.y\n"
    result = scan(sql, "tsql")
    assert result.errors == ()
    assert set(result.edges) == {("raw.x", "mart.a"), ("raw.y", "mart.b")}


def test_a_table_renamed_after_its_build_passes_its_lineage_on():
    sql = (
        "CREATE TABLE shop.orders_tmp AS SELECT order_id, amount FROM shop.orders;\n"
        "ALTER TABLE shop.orders_tmp RENAME TO orders_final;\n"  # keeps its schema
        "ALTER TABLE shop.orders_final RENAME COLUMN amount TO total;\n"  # moves no data
    )
    result = scan(sql, "postgres")
    assert result.errors == ()
    assert set(result.edges) == {
        ("shop.orders", "shop.orders_tmp"),
        ("shop.orders_tmp", "shop.orders_final"),
    }
    assert ("shop.orders_tmp.amount", "shop.orders_final.amount") in columns(result)


@pytest.mark.parametrize(
    ("dialect", "sql", "kind"),
    [
        ("snowflake", "ALTER TABLE shop.orders_final SWAP WITH shop.orders", "swap"),
        (
            "spark",  # sqlglot keeps this as text: the statement is read from it
            "ALTER TABLE shop.orders_final EXCHANGE PARTITION (dt='2026-01-01') "
            "WITH TABLE shop.orders",
            "exchange_partition",
        ),
        (
            "oracle",
            "ALTER TABLE shop.orders_final EXCHANGE PARTITION p2026 WITH TABLE shop.orders",
            "exchange_partition",
        ),
    ],
)
def test_a_swap_or_partition_exchange_moves_the_other_tables_rows_in(dialect, sql, kind):
    result = scan(sql, dialect)
    assert result.errors == ()
    assert result.files["f.sql"].kind == kind
    assert result.edges == (("shop.orders", "shop.orders_final"),)
    assert columns(result) == {
        ("shop.orders.order_id", "shop.orders_final.order_id"),
        ("shop.orders.amount", "shop.orders_final.amount"),
    }


def test_a_partition_exchange_in_a_script_is_traced_not_passed_over():
    sql = (
        "INSERT OVERWRITE TABLE stage.day SELECT * FROM shop.orders;\n"
        "ALTER TABLE shop.history EXCHANGE PARTITION (dt='2026-01-01') WITH TABLE stage.day;\n"
    )
    result = scan(sql, "spark")
    assert result.errors == ()
    assert set(result.edges) == {("shop.orders", "stage.day"), ("stage.day", "shop.history")}


def test_a_copy_of_a_querys_rows_reads_the_querys_tables():
    sql = "COPY INTO mart.ids FROM (SELECT o.order_id FROM shop.orders o)"
    result = scan(sql, "snowflake")
    assert result.errors == ()
    assert result.edges == (("shop.orders", "mart.ids"),)  # not a table named ''
    assert columns(result) == {("shop.orders.order_id", "mart.ids.order_id")}


def test_a_snowflake_stage_is_a_node_named_as_written():
    result = scan("COPY INTO shop.orders FROM @raw.landing/orders/", "snowflake")
    assert result.edges == (("@raw.landing/orders/", "shop.orders"),)
    query = "SELECT t.$1:id AS id FROM @raw.landing t"  # a query over the stage's files
    assert scan(query, "snowflake").edges == (("@raw.landing", "report"),)
    star = scan("SELECT * FROM @raw.landing", "snowflake")  # a stage is a name, not a call
    assert columns(star) == {("@raw.landing.*", "report.*")}
