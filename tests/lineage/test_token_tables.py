"""Table lineage read from the tokens of a statement sqlglot cannot parse: each case is valid
SQL in its dialect that sqlglot 30 refuses (or reads only as an opaque command), or a form the
reader must not mistake for a table."""

from __future__ import annotations

import pytest

from medallion_assets.lineage.statement import SqlError, parse_statement
from medallion_assets.lineage.token_tables import WordsLineage, words_lineage

UNPARSED = [
    # (dialect, sql, kind, target, sources)
    ("athena", "SELECT col1 FROM `schema1`.`tab1`", "select", "q", ("schema1.tab1",)),
    ("spark", 'SELECT 1 "as" FROM Db.Tab1', "select", "q", ("db.tab1",)),
    (
        "tsql",
        "UPDATE sr SET sr.Name += ' - x' FROM Production.ScrapReason AS sr "
        "JOIN Production.WorkOrder AS wo ON sr.ScrapReasonID = wo.ScrapReasonID",
        "update",
        "production.scrapreason",
        ("production.workorder",),
    ),
    (
        "spark",
        "WITH a AS (SELECT * FROM s1), b (x) AS (SELECT 1 \"as\" FROM s2) "
        "INSERT OVERWRITE TABLE db.t SELECT * FROM a, b, s3 x "
        "WHERE y IN (SELECT z FROM s4) AND EXTRACT(YEAR FROM d) > 1",
        "insert",
        "db.t",
        ("s1", "s2", "s3", "s4"),
    ),
    (
        "spark",
        "CREATE OR REPLACE TEMPORARY VIEW v AS SELECT 1 FROM t1 WATERMARK ts DELAY OF "
        "INTERVAL 1 HOUR "
        "JOIN (SELECT * FROM t2) q ON 1=1 LEFT JOIN (t3 JOIN t4 ON t3.a = t4.a) ON 1=1, "
        "LATERAL VIEW explode(arr) e AS x, range(10) r",
        "create_view",
        "v",
        ("t1", "t2", "t3", "t4"),
    ),
    (
        "bigquery",
        "MERGE ds.tgt t USING (SELECT * FROM ds.src WHERE a = ANY(SELECT b FROM u) PIVOT) s "
        "ON t.a = s.a WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT ROW",
        "merge",
        "ds.tgt",
        ("ds.src", "u"),
    ),
    ("spark", "SELECT id FROM shop.events WATERMARK ts DELAY OF INTERVAL 1 HOUR", "select",
     "q", ("shop.events",)),
    # an INSERT's target is never a source's alias
    ("spark", 'INSERT INTO t SELECT 1 "as" FROM raw.x AS t', "insert", "t", ("raw.x",)),
]  # fmt: skip


@pytest.mark.parametrize("dialect, sql, kind, target, sources", UNPARSED)
def test_tables_of_a_statement_sqlglot_refuses(dialect, sql, kind, target, sources):
    with pytest.raises(SqlError, match="does not parse"):
        parse_statement(sql, dialect, "q")  # else this case tests nothing: the parser reads it
    assert words_lineage(sql, dialect, "q") == WordsLineage(kind, target, sources)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT (a FROM t",  # a typo: the parse error says where
        'DELETE FROM t WHERE a = 1 "as"',  # moves no data
        'INSERT INTO a SELECT 1 "as"; INSERT INTO b SELECT 2',  # two writes: whose sources?
        "SELECT SUBSTRING(x FROM 2)",  # no table, and a bare SELECT without a target name
        "SELECT a FROM [project:ds.t1], [project:ds.t2]",  # legacy BigQuery: names unread
        'SELECT 1 "as" FROM <input_table>',  # a template's placeholder
    ],
)
def test_no_lineage_when_the_words_do_not_name_one_write(sql):
    assert words_lineage(sql, "bigquery", None if "SUBSTRING" in sql else "q") is None
