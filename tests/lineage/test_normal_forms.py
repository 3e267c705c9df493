"""A dialect's own forms of naming and inserting, traced through ``scan_directory`` like the
common forms: Spark's IDENTIFIER clause, Hive's FROM-first multi-insert, Oracle's and
Snowflake's INSERT ALL / INSERT FIRST."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_assets.lineage.normal_forms import identifier_clauses
from medallion_assets.lineage.scan import scan_directory


def traced(folder: Path, sql: str, dialect: str) -> tuple[set, set]:
    """(table edges, column edges) of a file holding ``sql``, which must trace whole."""
    (folder / "load.sql").write_text(sql)
    result = scan_directory(folder, dialect)
    assert not result.errors
    return set(result.edges), {(e.source, e.target) for e in result.column_edges}


def test_an_identifier_clause_names_the_table_it_holds(tmp_path: Path):
    sql = "INSERT INTO IDENTIFIER('mart.t') SELECT IDENTIFIER('a') AS x FROM IDENTIFIER('raw.s')"
    assert traced(tmp_path, sql, "spark") == ({("raw.s", "mart.t")}, {("raw.s.a", "mart.t.x")})


@pytest.mark.parametrize("dialect", ["postgres", "snowflake"])
def test_identifier_is_a_plain_function_outside_spark(dialect: str):
    sql = "SELECT IDENTIFIER('a') FROM s"
    assert identifier_clauses(sql, dialect) == sql


def test_an_identifier_clause_of_a_parameter_is_left_as_written():
    sql = "SELECT a FROM IDENTIFIER(:table)"
    assert identifier_clauses(sql, "spark") == sql


def test_a_hive_multi_insert_is_one_write_per_target_each_reading_the_source(tmp_path: Path):
    sql = (
        "FROM raw.s\n"
        "INSERT INTO mart.big SELECT a WHERE a > 10\n"
        "INSERT OVERWRITE TABLE mart.all_b SELECT b, c"
    )
    tables, columns = traced(tmp_path, sql, "hive")
    assert tables == {("raw.s", "mart.big"), ("raw.s", "mart.all_b")}
    assert columns == {
        ("raw.s.a", "mart.big.a"),
        ("raw.s.b", "mart.all_b.b"),
        ("raw.s.c", "mart.all_b.c"),
    }


def test_a_from_first_insert_of_one_target_reads_its_derived_table(tmp_path: Path):
    sql = "FROM (SELECT o.id, o.amount FROM raw.orders o) z INSERT INTO mart.t SELECT z.amount"
    tables, columns = traced(tmp_path, sql, "spark")
    assert (tables, columns) == (
        {("raw.orders", "mart.t")},
        {("raw.orders.amount", "mart.t.amount")},
    )


def test_insert_all_takes_the_selects_rows_into_every_target(tmp_path: Path):
    sql = "INSERT ALL INTO mart.t1 (k, v) VALUES (x, y) INTO mart.t2 SELECT x, y FROM raw.s"
    _tables, columns = traced(tmp_path, sql, "snowflake")
    assert columns == {
        ("raw.s.x", "mart.t1.k"),
        ("raw.s.y", "mart.t1.v"),
        ("raw.s.x", "mart.t2.x"),
        ("raw.s.y", "mart.t2.y"),
    }


def test_insert_first_traces_every_branch(tmp_path: Path):
    sql = (
        "INSERT FIRST WHEN x > 1 THEN INTO mart.hi VALUES (x) ELSE INTO mart.lo SELECT x FROM raw.s"
    )
    tables, _columns = traced(tmp_path, sql, "snowflake")
    assert tables == {("raw.s", "mart.hi"), ("raw.s", "mart.lo")}


def test_a_multi_insert_keeps_the_with_it_starts_with(tmp_path: Path):
    sql = (
        "WITH s AS (SELECT a, b FROM raw.src WHERE a > 0)\n"
        "FROM s\n"
        "INSERT INTO mart.t1 SELECT a\n"
        "INSERT OVERWRITE TABLE mart.t2 SELECT b"
    )
    tables, columns = traced(tmp_path, sql, "spark")
    assert tables == {("raw.src", "mart.t1"), ("raw.src", "mart.t2")}
    assert columns == {("raw.src.a", "mart.t1.a"), ("raw.src.b", "mart.t2.b")}


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO mart.t TABLE raw.s",
        "INSERT OVERWRITE TABLE mart.t TABLE raw.s",
        "CREATE VIEW mart.t AS TABLE raw.s",
        "INSERT INTO mart.t SELECT a FROM (TABLE raw.s)",
        "WITH c AS (TABLE raw.s) INSERT INTO mart.t SELECT a FROM c",
        "CREATE TABLE mart.t (a INT);\n"
        "INSERT INTO mart.t SELECT a FROM raw.s WHERE false UNION ALL TABLE raw.s",
    ],
)
def test_sparks_table_query_reads_the_table(tmp_path: Path, sql: str):
    (tmp_path / "load.sql").write_text(sql)
    result = scan_directory(tmp_path, "spark", schema={"raw.s": {"a": "int"}})
    assert not result.errors
    assert set(result.edges) == {("raw.s", "mart.t")}
    assert {(e.source, e.target) for e in result.column_edges} == {("raw.s.a", "mart.t.a")}
