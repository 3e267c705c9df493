"""A scanned file may be a script: each write is traced, statements that move no data are
passed over, and a table's declared columns name an INSERT's columns."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from medallion_assets.lineage.scan import scan_directory
from medallion_assets.lineage.statement import SqlError, parse_statement


def scan(folder: Path, files: dict[str, str], dialect: str = "spark"):
    for name, text in files.items():
        (folder / name).write_text(text)
    return scan_directory(folder, dialect)


def columns(result) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in result.column_edges}


ETL = """
DROP TABLE IF EXISTS stage.a;
CREATE TABLE stage.a (id INT, amount DECIMAL(10,2));
INSERT INTO stage.a SELECT o.order_id, o.amount FROM raw.orders o;
CREATE TEMP VIEW doubled AS SELECT id, amount * 2 AS dbl FROM stage.a;
INSERT OVERWRITE TABLE mart.b SELECT id, dbl FROM doubled;
TRUNCATE TABLE raw.orders;
"""


def test_each_write_of_a_script_is_traced_through_the_temporary_view_before_it(tmp_path):
    result = scan(tmp_path, {"etl.sql": ETL})
    assert result.errors == ()
    assert sorted(result.files) == ["etl.sql#3", "etl.sql#5"]
    assert set(result.edges) == {("raw.orders", "stage.a"), ("stage.a", "mart.b")}
    # The positional INSERT takes the declared names, not the query's.
    assert columns(result) == {
        ("raw.orders.order_id", "stage.a.id"),
        ("raw.orders.amount", "stage.a.amount"),
        ("stage.a.id", "mart.b.id"),
        ("stage.a.amount", "mart.b.dbl"),
    }


def test_a_project_file_still_writes_exactly_one_table():
    with pytest.raises(SqlError, match="neither the file's write nor a preamble"):
        parse_statement(ETL, "spark", "x")


def test_one_write_after_a_drop_keeps_the_files_own_name(tmp_path):
    sql = "DROP TABLE IF EXISTS mart.x; CREATE TABLE mart.x AS SELECT a FROM raw.y"
    result = scan(tmp_path, {"x.sql": sql}, "postgres")
    assert list(result.files) == ["x.sql"] and result.errors == ()
    assert columns(result) == {("raw.y.a", "mart.x.a")}


def test_several_queries_of_one_file_write_numbered_targets(tmp_path):
    result = scan(tmp_path, {"report.sql": "SELECT a FROM t1; SELECT b FROM t2;"})
    assert set(result.edges) == {("t1", "report_1"), ("t2", "report_2")}


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_call_and_dynamic_sql_are_passed_over_and_a_literal_one_is_traced(tmp_path, capsys):
    records = Records()
    sqlglot_log = logging.getLogger("sqlglot")
    sqlglot_log.addHandler(records)
    script = (
        "CALL shop.refresh();\n"
        "EXECUTE IMMEDIATE CONCAT('INSERT INTO x SELECT * FROM ', source_table);\n"
        'EXECUTE IMMEDIATE "INSERT INTO u SELECT b FROM r";\n'
        "INSERT INTO t SELECT a FROM s"
    )
    try:
        result = scan(tmp_path, {"load.sql": script}, "bigquery")
    finally:
        sqlglot_log.removeHandler(records)
    assert set(result.edges) == {("s", "t"), ("r", "u")}
    assert result.errors == ()
    # sqlglot's own warning about the statements does not reach the console or the log.
    assert "Falling back" not in capsys.readouterr().err + " ".join(records.messages)


def test_a_statement_that_does_not_parse_is_reported_and_the_rest_traced(tmp_path):
    result = scan(
        tmp_path, {"load.sql": "INSERT INTO u SELECT FROM WHERE; INSERT INTO t SELECT a FROM s"}
    )
    assert set(result.edges) == {("s", "t")}
    assert [(e.file, e.stage) for e in result.errors] == [("load.sql#1", "statement")]


def test_a_file_that_only_declares_a_table_is_a_node_with_its_columns(tmp_path):
    result = scan(tmp_path, {"ddl.sql": "-- the table\nCREATE TABLE mart.t (a INT, b STRING)"})
    assert result.errors == ()
    lineage = result.files["ddl.sql"]
    assert (lineage.target, lineage.sources) == ("mart.t", ())
    assert [(c.column, c.type) for c in lineage.columns] == [("a", "INT"), ("b", "STRING")]
    assert result.nodes == ("mart.t",)


def test_a_file_that_moves_no_data_is_passed_over_by_name(tmp_path):
    files = {
        "purge.sql": "DELETE FROM t WHERE a = 1; DROP TABLE u",
        "udf.sql": "CREATE OR REPLACE FUNCTION shop.twice(x INT64) AS (x * 2)",
        "notes.sql": "-- nothing runs here any more\n",
        "temp_only.sql": "CREATE TEMP FUNCTION f(x INT64) AS (x + 1);",
        "snapshot.sql": "DROP SNAPSHOT TABLE a.b;\nCREATE SNAPSHOT TABLE a.b CLONE c.d",
        "drop_column.sql": "ALTER TABLE `p.d.t` DROP COLUMN patient_name",  # one statement
        "delete_only.sql": "-- old rows\nDELETE FROM t WHERE a = 1",
        "rename.sql": "ALTER TABLE x.tmp RENAME TO done",  # moves rows: traced
        "sequence.sql": "CREATE SEQUENCE ids",
    }
    result = scan(tmp_path, files, "bigquery")
    assert result.errors == ()
    assert set(result.passed) == {
        "purge.sql", "udf.sql", "notes.sql", "temp_only.sql", "drop_column.sql", "delete_only.sql",
        "sequence.sql",
    }  # fmt: skip
    assert result.as_dict()["passed_over"] == list(result.passed)
    assert set(result.edges) == {("c.d", "a.b"), ("x.tmp", "x.done")}  # a snapshot is a clone


def test_a_procedure_whose_signature_sqlglot_cannot_read_has_its_body_traced(tmp_path):
    procedure = """CREATE OR REPLACE PROCEDURE utils.diff(
  query_a STRING, OUT res ARRAY<STRUCT<i INT64, differs BOOL>>)
BEGIN
  DECLARE id STRING DEFAULT GENERATE_UUID();
  INSERT INTO audit.diffs SELECT id, a FROM staging.pairs;
END"""
    result = scan(tmp_path, {"diff.sql": procedure}, "bigquery")
    assert set(result.edges) == {("staging.pairs", "audit.diffs")}
    assert result.errors == ()


BIGQUERY_PROCEDURE = """
CREATE OR REPLACE PROCEDURE shop.refresh_daily(run_day DATE, max_tries INT64)
BEGIN
  DECLARE tries INT64 DEFAULT 0;
  IF run_day IS NULL THEN
    SET run_day = CURRENT_DATE();
  END IF;
  LOOP
    SET tries = tries + 1;
    INSERT INTO shop.daily_sales (day, revenue)
    SELECT o.order_day, SUM(o.amount) FROM shop.orders AS o
    WHERE o.order_day = run_day GROUP BY o.order_day;
    IF tries >= max_tries THEN LEAVE; END IF;
  END LOOP;
EXCEPTION WHEN ERROR THEN
  SELECT @@error.message AS failure;
  RAISE;
END;
"""

ORACLE_PROCEDURE = """
CREATE OR REPLACE PROCEDURE shop.load_customers(p_since DATE) AS
  v_rows NUMBER := 0;
BEGIN
  IF p_since IS NULL THEN
    p_since := SYSDATE - 1;
  END IF;
  INSERT INTO shop.customer_dim (customer_id, full_name)
  SELECT c.id, c.first_name || ' ' || c.last_name FROM shop.customers c
  WHERE c.updated_at >= p_since;
  v_rows := SQL%ROWCOUNT;
  COMMIT;
EXCEPTION WHEN OTHERS THEN
  ROLLBACK;
  RAISE;
END;
/
"""

TSQL_PROCEDURE = """
CREATE PROCEDURE shop.archive_orders @before DATE
AS
BEGIN
  SET NOCOUNT ON;
  BEGIN TRY
    DECLARE @moved INT = 0;
    IF @before IS NULL
      SET @before = GETDATE();
    INSERT INTO shop.orders_archive (order_id, amount)
    SELECT o.order_id, o.amount FROM shop.orders AS o WHERE o.order_day < @before;
    SELECT @@ROWCOUNT AS moved;
  END TRY
  BEGIN CATCH
    THROW;
  END CATCH
END;
GO
"""


@pytest.mark.parametrize(
    ("dialect", "sql", "expected"),
    [
        (
            "bigquery",
            BIGQUERY_PROCEDURE,
            {
                ("shop.orders.order_day", "shop.daily_sales.day"),
                ("shop.orders.amount", "shop.daily_sales.revenue"),
            },
        ),
        (
            "oracle",
            ORACLE_PROCEDURE,
            {
                ("shop.customers.id", "shop.customer_dim.customer_id"),
                ("shop.customers.first_name", "shop.customer_dim.full_name"),
                ("shop.customers.last_name", "shop.customer_dim.full_name"),
            },
        ),
        (
            "tsql",
            TSQL_PROCEDURE,
            {
                ("shop.orders.order_id", "shop.orders_archive.order_id"),
                ("shop.orders.amount", "shop.orders_archive.amount"),
            },
        ),
    ],
    ids=["bigquery_script", "oracle_plsql_salvaged", "tsql_try_catch"],
)
def test_the_writes_inside_a_procedure_are_traced(tmp_path, dialect, sql, expected):
    result = scan(tmp_path, {"proc.sql": sql}, dialect)
    assert result.errors == ()
    written = {e.target.rsplit(".", 1)[0] for e in result.column_edges}
    tables = {t for t in written if t.startswith("shop.")}
    assert {(s, t) for s, t in columns(result) if t.rsplit(".", 1)[0] in tables} == expected
    # Parameters and variables are no columns of the tables read.
    assert not any("run_day" in s or "since" in s or "before" in s for s, _ in columns(result))


def test_a_statement_of_an_unreadable_script_that_moves_data_is_reported(tmp_path):
    sql = ORACLE_PROCEDURE.replace("SELECT c.id,", "SELECT (c.id,")
    result = scan(tmp_path, {"proc.sql": sql}, "oracle")
    assert [(e.file.split("#")[0], e.stage) for e in result.errors] == [("proc.sql", "statement")]
    assert "does not parse as oracle SQL" in result.errors[0].message


def test_an_insert_naming_some_columns_does_not_fix_the_tables_schema(tmp_path):
    sql = (
        "INSERT INTO mart.t (a) SELECT x FROM raw.s;\n"
        "INSERT INTO mart.u SELECT b FROM mart.t;"  # b is another column of mart.t
    )
    result = scan(tmp_path, {"load.sql": sql})
    assert columns(result) == {("raw.s.x", "mart.t.a"), ("mart.t.b", "mart.u.b")}
    assert result.unresolved == ()


def test_a_for_in_loops_body_is_traced(tmp_path):
    script = (
        "FOR day IN (SELECT DISTINCT d FROM shop.calendar) DO\n"
        "  INSERT INTO mart.daily SELECT d, count(*) AS n FROM shop.orders GROUP BY d;\n"
        "END FOR;"
    )
    result = scan(tmp_path, {"loop.sql": script}, "bigquery")
    assert set(result.edges) == {("shop.orders", "mart.daily")}
    assert result.errors == ()


def test_a_view_whose_query_does_not_parse_is_one_error_not_two(tmp_path):
    script = (
        "CREATE OR REPLACE TABLE ops.output (job_id STRING, slot_hours FLOAT64);\n"
        "CREATE OR REPLACE VIEW ops.input_view AS\n"
        "SELECT <id_column> id FROM <input_table> WHERE <id_column> IS NOT NULL;\n"
    )
    result = scan(tmp_path, {"tables.sql": script}, "bigquery")
    assert [(e.file, e.stage) for e in result.errors] == [("tables.sql#2", "statement")]
    assert result.nodes == ("ops.output",)  # the declared table is still a node


def test_a_snowflake_stage_or_file_format_is_passed_over(tmp_path):
    files = {
        "stage.sql": "CREATE STAGE IF NOT EXISTS raw.landing URL='gcs://bucket/data/'",
        "format.sql": "CREATE OR REPLACE FILE FORMAT raw.csv_fmt TYPE = CSV",
    }
    result = scan(tmp_path, files, "snowflake")
    assert result.errors == ()
    assert set(result.passed) == {"stage.sql", "format.sql"}


def test_a_scripts_statement_sqlglot_cannot_parse_keeps_its_tables(tmp_path):
    # sqlglot's MySQL reads no column named `key`; MySQL does
    files = {"load.sql": "USE shop;\nINSERT INTO mart.kv SELECT key, value FROM settings;\n"}
    result = scan(tmp_path, files, "mysql")
    assert [(e.file, e.stage) for e in result.errors] == [("load.sql#2", "columns")]
    assert "its tables are read from the names after FROM" in result.errors[0].message
    assert set(result.edges) == {("settings", "mart.kv")}


def test_a_sessions_own_statements_are_passed_over_and_the_write_after_them_traced(tmp_path):
    files = {
        "desc.sql": "DESC mart.t",
        "show.sql": "SHOW TABLES IN mart",
        "explain.sql": "EXPLAIN SELECT a FROM raw.s",
        "reset.sql": "RESET spark.sql.ansi.enabled",  # sqlglot cannot parse it
        "session.sql": "SET TIME ZONE 'UTC'; CACHE TABLE raw.s; MSCK REPAIR TABLE raw.s",
        "maintenance.sql": "-- weekly\nOPTIMIZE mart.t; VACUUM mart.t",
        "load.sql": "RESET spark.sql.ansi.enabled;\nINSERT INTO mart.t SELECT a FROM raw.s",
    }
    result = scan(tmp_path, files)
    assert result.errors == ()
    assert set(result.passed) == set(files) - {"load.sql"}
    assert set(result.edges) == {("raw.s", "mart.t")}
    assert columns(result) == {("raw.s.a", "mart.t.a")}  # the RESET cost no column


def test_alter_view_as_select_redefines_the_view(tmp_path):
    result = scan(tmp_path, {"v.sql": "ALTER VIEW mart.v AS SELECT a, b + 1 AS c FROM raw.s"})
    assert result.errors == ()
    assert set(result.edges) == {("raw.s", "mart.v")}
    assert columns(result) == {("raw.s.a", "mart.v.a"), ("raw.s.b", "mart.v.c")}


def test_each_write_carries_only_the_temporary_views_it_reads():
    from medallion_assets.lineage.analysis import SqlFile
    from medallion_assets.lineage.script_parts import script_parts

    sql = (
        "CREATE TEMP VIEW a AS SELECT x FROM raw.s;\n"
        "CREATE TEMP VIEW b AS SELECT y FROM raw.u;\n"
        "CREATE TEMP VIEW c AS SELECT x FROM a;\n"
        "SET spark.sql.shuffle.partitions = 4;\n"
        "INSERT INTO mart.one SELECT x FROM c;\n"
        "CREATE OR REPLACE TEMP VIEW b AS SELECT z AS y FROM raw.w;\n"
        "INSERT INTO mart.two SELECT y FROM b"
    )
    one, two = script_parts(SqlFile("load.sql", sql, "spark", None)).parts
    assert [line.split(" AS ")[0] for line in one.text.splitlines()] == [
        "CREATE TEMPORARY VIEW a",
        "CREATE TEMPORARY VIEW c",
        "SET spark.sql.shuffle.partitions = 4;",
        "INSERT INTO mart.one SELECT x FROM c",
    ]
    assert "raw.u" not in two.text and "raw.w" in two.text  # the last b before the write


def test_a_long_script_of_temporary_views_is_traced_view_by_view(tmp_path):
    sql = "".join(
        f"CREATE OR REPLACE TEMP VIEW v{i} AS SELECT a, b FROM raw.t{i};\n"
        f"INSERT INTO mart.o{i} SELECT a FROM v{i} WHERE b > {i};\n"
        for i in range(60)
    )
    result = scan(tmp_path, {"long.sql": sql})
    assert result.errors == ()
    assert set(result.edges) == {(f"raw.t{i}", f"mart.o{i}") for i in range(60)}


def test_one_scripts_writes_that_read_one_another_in_turn_are_no_cycle(tmp_path):
    script = (
        "CREATE TABLE stage.bak AS SELECT * FROM mart.t;\n"
        "DELETE FROM mart.t;\n"
        "INSERT INTO mart.t SELECT * FROM stage.bak WHERE keep"
    )
    result = scan(tmp_path, {"reload.sql": script})
    assert result.errors == ()
    assert set(result.edges) == {("mart.t", "stage.bak"), ("stage.bak", "mart.t")}
    # The same two writes in two files are a cycle: nothing orders them.
    (tmp_path / "reload.sql").unlink()
    two = scan(tmp_path, {"a.sql": script.split(";")[0], "b.sql": script.split(";")[2]})
    assert [e.stage for e in two.errors] == ["cycle"]


def test_a_table_or_view_created_as_values_is_a_node_reading_its_subqueries(tmp_path):
    files = {
        "consts.sql": "CREATE TABLE ref.consts AS VALUES (1, 'a'), (2, 'b') AS v(k, name)",
        "top.sql": "CREATE VIEW ref.top (m) AS VALUES ((SELECT max(x) FROM raw.s))",
    }
    result = scan(tmp_path, files)
    assert result.errors == ()
    assert "ref.consts" in result.nodes
    assert set(result.edges) == {("raw.s", "ref.top")}


def test_temporary_views_alone_dynamic_sql_and_a_named_view_are_read_as_spark_runs_them(tmp_path):
    files = {
        "views_only.sql": "CREATE TEMPORARY VIEW v AS SELECT a FROM raw.s",  # gone at the end
        "declare_only.sql": "DECLARE var = 'sometable'",
        "dynamic.sql": "EXECUTE IMMEDIATE 'INSERT INTO mart.d SELECT a FROM raw.s'",
        "named.sql": (
            "CREATE TEMP VIEW n (k, v) AS SELECT x, y FROM raw.u;\n"
            "CREATE TEMP VIEW c AS VALUES (1, 'a') AS t(code, label);\n"
            "INSERT INTO mart.n SELECT n.k, n.v, c.label FROM n JOIN c ON n.k = c.code"
        ),
    }
    result = scan(tmp_path, files)
    assert result.errors == ()
    assert set(result.passed) == {"views_only.sql", "declare_only.sql"}
    assert set(result.edges) == {("raw.s", "mart.d"), ("raw.u", "mart.n")}
    assert {(s, t) for s, t in columns(result) if t.startswith("mart.n")} == {
        ("raw.u.x", "mart.n.k"),
        ("raw.u.y", "mart.n.v"),
    }


def test_a_with_that_does_not_parse_keeps_its_cte_names_out_of_the_sources(tmp_path):
    sql = "with a as (select ';' as e from raw.t where 1 = 1 NULL)\nselect e from a"
    result = scan(tmp_path, {"m.sql": sql}, "snowflake")
    assert [e.stage for e in result.errors] == ["columns"]  # its columns are lost, said so
    assert set(result.edges) == {("raw.t", "m")}
