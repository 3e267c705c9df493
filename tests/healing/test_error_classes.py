"""Built-in classes of errors that retrying cannot clear, on real exceptions (the OS's, pyarrow's,
the catalog's): each is permanent with a code and a fix, the project's own rules still win,
an exception may declare its own class, and a Java trace shrinks to its root cause."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from medallion_assets.catalog import CatalogError, load_catalog
from medallion_assets.catalog.operations import HealingRule
from medallion_assets.errors import PermanentError, headline, summary_line
from medallion_assets.healing.diagnosis import UNCLASSIFIED, Failure, diagnose
from tests.conftest import copy_demo_project


def caught(action) -> BaseException:
    try:
        action()
    except BaseException as error:
        return error
    raise AssertionError("the action did not raise")


def test_a_file_where_a_folder_should_be_is_a_path_of_the_wrong_kind(tmp_path: Path):
    (tmp_path / "_staging").write_text("a file")
    for error in (
        caught(lambda: (tmp_path / "_staging").mkdir(exist_ok=True)),  # FileExistsError
        caught(lambda: (tmp_path / "_staging" / "x").mkdir()),  # NotADirectoryError
        caught(lambda: tmp_path.read_text()),  # IsADirectoryError
    ):
        diagnosis = diagnose((), Failure.of(error))
        assert (diagnosis.error_code, diagnosis.then, diagnosis.builtin) == (
            "PATH_OF_WRONG_KIND",
            "fail",
            True,
        )
        assert "move the path named aside" in diagnosis.fix
        assert str(tmp_path) in Failure.of(error).summary


def test_permission_denied_and_a_read_only_filesystem_are_paths_not_writable(tmp_path: Path):
    denied = diagnose((), Failure.of(PermissionError(13, "Permission denied", str(tmp_path))))
    read_only = diagnose((), Failure.of(OSError(30, "Read-only file system", str(tmp_path))))
    assert denied.error_code == read_only.error_code == "PATH_NOT_WRITABLE"
    assert denied.permanent and read_only.permanent and "MEDALLION_LAKE" in denied.fix


@pytest.mark.parametrize("content", [b"", b"PAR1 garbage, then cut"])
def test_an_empty_or_damaged_parquet_file_is_a_corrupt_object(tmp_path: Path, content: bytes):
    path = tmp_path / "part-0.parquet"
    path.write_bytes(content)
    diagnosis = diagnose((), Failure.of(caught(lambda: pq.read_schema(path))))
    assert (diagnosis.error_code, diagnosis.rule, diagnosis.permanent) == (
        "CORRUPT_OBJECT",
        "corrupt_object",
        True,
    )
    undecodable = caught(lambda: b"\xff\xfe\x00a".decode("utf-8"))
    assert diagnose((), Failure.of(undecodable)).error_code == "CORRUPT_OBJECT"


def test_a_project_that_does_not_load_is_permanent(tmp_path: Path):
    root = copy_demo_project(tmp_path / "broken")
    (root / "metadata" / "policies.yaml").write_text("retry_policies: [not, a, mapping]\n")
    error = caught(lambda: load_catalog(root, use_cache=False))
    assert isinstance(error, CatalogError)
    diagnosis = diagnose((), Failure.of(error))
    assert diagnosis.error_code == "PROJECT_DOES_NOT_LOAD" and diagnosis.permanent
    assert "medallion catalog validate" in diagnosis.fix


@pytest.mark.parametrize(
    "message",
    [
        "[INVALID_ATTRIBUTE_NAME_SYNTAX] Syntax error in the attribute name: `a`b`.",
        "\n[PARSE_SYNTAX_ERROR] Syntax error at or near '`'. SQLSTATE: 42601 (line 1, pos 4)",
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column ... with name `x` cannot be resolved.",
    ],
)
def test_names_spark_rejects_are_invalid_names(message: str):
    diagnosis = diagnose((), Failure.of(RuntimeError(message)))
    assert diagnosis.error_code == "INVALID_NAME" and diagnosis.permanent


def test_the_projects_rules_come_first_and_can_retry_a_builtin_permanent_error(
    tmp_path: Path, demo_catalog
):
    (tmp_path / "_staging").write_text("a file")
    error = caught(lambda: (tmp_path / "_staging").mkdir(exist_ok=True))
    retry_it = HealingRule.model_validate(
        {
            "name": "flaky_nfs",
            "match": {"exception": "FileExistsError"},
            "error_code": "NFS_LAG",
            "actions": ["wait"],
            "then": "retry",
        }
    )
    diagnosis = diagnose((retry_it,), Failure.of(error))
    assert (diagnosis.error_code, diagnosis.then, diagnosis.builtin) == ("NFS_LAG", "retry", False)
    # TheWorldShop's own rules classify what they name, and leave these to the built-ins.
    assert diagnose(demo_catalog.healing_rules, Failure.of(error)).error_code == (
        "PATH_OF_WRONG_KIND"
    )
    missing = Failure.of(RuntimeError("[UNRESOLVED_COLUMN.WITH_SUGGESTION] `x` cannot be resolved"))
    assert diagnose(demo_catalog.healing_rules, missing).error_code == "SQL_MISSING_COLUMN"


def test_errors_that_may_clear_stay_unclassified_and_are_retried(demo_catalog):
    for error in (
        ValueError("division by zero"),
        TimeoutError("timed out"),
        ConnectionRefusedError(111, "Connection refused"),
        FileNotFoundError(2, "No such file or directory", "/lake/x/versions/1"),  # pruned
    ):
        diagnosis = diagnose(demo_catalog.healing_rules, Failure.of(error))
        assert diagnosis.error_code == UNCLASSIFIED and diagnosis.then == "retry", error


class CorruptObject(PermanentError):
    fix = "re-deliver the object"


class Throttled(Exception):
    error_code = "VENDOR_THROTTLED"
    permanent = False


class Declares(Exception):
    permanent = True  # no base class needed


def test_an_exception_that_declares_itself_permanent_is_honoured_through_its_wrapper():
    def wrapped() -> None:
        try:
            raise CorruptObject("raw object s3://feeds/a.csv is not UTF-8 at byte 12")
        except CorruptObject as inner:
            raise RuntimeError("ingest failed") from inner

    failure = Failure.of(caught(wrapped))
    diagnosis = diagnose((), failure)
    assert (diagnosis.error_code, diagnosis.permanent, diagnosis.fix) == (
        "CORRUPT_OBJECT",
        True,
        "re-deliver the object",
    )
    assert diagnosis.source() == "built-in: declared by CorruptObject"
    assert failure.summary == "raw object s3://feeds/a.csv is not UTF-8 at byte 12"
    assert diagnose((), Failure.of(Declares("x"))).error_code == "DECLARES"
    throttled = diagnose((), Failure.of(Throttled("slow")))
    assert (throttled.error_code, throttled.then) == ("VENDOR_THROTTLED", "retry")


# The shape of a py4j error from Spark 4 (frames trimmed): a task's error, the driver's trace,
# then the causes; the last "Caused by:" is the root.
JAVA_TRACE = """An error occurred while calling o63.parquet.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 5.0 failed \
1 times, most recent failure: Lost task 0.0 (TID 5): java.io.IOException: Mkdirs failed to create \
file:/lake/silver/t/_staging/abc/_temporary/0 (exists=false, cwd=file:/work)
\tat org.apache.hadoop.fs.ChecksumFileSystem.create(ChecksumFileSystem.java:774)
\tat org.apache.hadoop.fs.FileSystem.create(FileSystem.java:1234)
Driver stacktrace:
\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2935)
Caused by: org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows.
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.taskFailedWhileWritingRowsError(Q.scala:1)
Caused by: java.io.IOException: Mkdirs failed to create \
file:/lake/silver/t/_staging/abc/_temporary/0 (exists=false, cwd=file:/work)
\tat org.apache.hadoop.fs.ChecksumFileSystem.create(ChecksumFileSystem.java:774)
\t... 25 more
"""


def test_a_java_trace_is_summarised_by_its_root_cause_with_the_path():
    line = summary_line(JAVA_TRACE)
    assert line == (
        "IOException: Mkdirs failed to create file:/lake/silver/t/_staging/abc/_temporary/0 "
        "(exists=false, cwd=file:/work)"
    )
    diagnosis = diagnose((), Failure.of(RuntimeError(JAVA_TRACE)))
    assert diagnosis.error_code == "PATH_NOT_WRITABLE"
    py4j = (
        "An error occurred while calling o69.parquet.\n"
        ": org.apache.hadoop.fs.ParentNotDirectoryException: Parent path is not a directory: "
        "file:/lake/afile\n\tat x.y(Z.java:1)"
    )
    assert summary_line(py4j) == (
        "ParentNotDirectoryException: Parent path is not a directory: file:/lake/afile"
    )
    assert diagnose((), Failure.of(RuntimeError(py4j))).error_code == "PATH_OF_WRONG_KIND"


def test_a_headline_adds_a_location_the_first_line_lacks_and_falls_back_to_the_type():
    text = "[FAILED_READ_FILE.NO_HINT] Encountered an error.\nwhile reading s3a://b/k.parquet now"
    assert (
        summary_line(text) == "[FAILED_READ_FILE.NO_HINT] Encountered an error. (s3a://b/k.parquet)"
    )
    assert headline(KeyError()) == "KeyError"
    assert headline(OSError(os.strerror(28))) == "No space left on device"
    assert len(summary_line("x" * 5000)) == 500


def test_an_undecodable_raw_object_is_permanent_without_any_project_rule():
    from medallion_assets.runtime.ingest.raw_files import CorruptObject as RawCorruptObject

    error = RawCorruptObject("s3://feeds/a.csv", "not UTF-8 at byte 12")
    diagnosis = diagnose((), Failure.of(error))
    assert (diagnosis.error_code, diagnosis.permanent) == ("CORRUPT_OBJECT", True)
    assert "s3://feeds/a.csv" in Failure.of(error).summary


def test_data_that_breaks_a_type_or_constraint_fails_at_once_in_every_engine():
    import duckdb
    import psycopg.errors

    connection = duckdb.connect()
    connection.execute("CREATE TABLE t (k INTEGER NOT NULL PRIMARY KEY, n TINYINT)")
    connection.execute("INSERT INTO t VALUES (1, 1)")
    for error in (
        caught(lambda: connection.execute("INSERT INTO t VALUES (NULL, 1)")),
        caught(lambda: connection.execute("INSERT INTO t VALUES (1, 2)")),
        caught(lambda: connection.execute("INSERT INTO t VALUES (2, 300)")),
        caught(lambda: connection.execute("SELECT CAST('x' AS INTEGER)").fetchall()),
        psycopg.errors.NotNullViolation('null value in column "k" violates not-null constraint'),
        psycopg.errors.NumericValueOutOfRange("numeric field overflow"),
        RuntimeError(
            '[CAST_OVERFLOW] The value 1e+25D of the type "DOUBLE" cannot be cast to '
            '"DECIMAL(18,2)" due to an overflow. SQLSTATE: 22003'
        ),
        RuntimeError("[ARITHMETIC_OVERFLOW] long overflow. Use 'try_add' SQLSTATE: 22003"),
    ):
        diagnosis = diagnose((), Failure.of(error))
        assert (diagnosis.error_code, diagnosis.then) == ("DATA_ERROR", "fail"), error
        assert "retrying the same data fails the same way" in diagnosis.fix
    for transient in (ConnectionResetError(), psycopg.errors.UniqueViolation("a race")):
        assert diagnose((), Failure.of(transient)).then == "retry"


def test_a_warehouse_table_whose_columns_clash_with_the_load_fails_at_once():
    import duckdb
    import psycopg.errors

    connection = duckdb.connect()
    connection.execute("CREATE TABLE t (k INTEGER)")
    for error in (
        caught(lambda: connection.execute("INSERT INTO t (k, missing) VALUES (1, 2)")),
        psycopg.errors.UndefinedColumn('column "missing" of relation "t" does not exist'),
        psycopg.errors.DatatypeMismatch('column "k" is of type integer but expression is text'),
    ):
        diagnosis = diagnose((), Failure.of(error))
        assert (diagnosis.error_code, diagnosis.then) == ("WAREHOUSE_SCHEMA_CLASH", "fail"), error
        assert "retrying loads the same columns" in diagnosis.fix


def test_a_full_disk_is_permanent_and_says_so():
    for error in (
        OSError(28, os.strerror(28)),
        RuntimeError("[Errno 28] Error writing bytes to file. Detail: [errno 28] No space left"),
        RuntimeError(
            "org.apache.spark.SparkException: Job aborted.\nCaused by: "
            "java.io.IOException: No space left on device\n\tat x.y(Z.java:1)"
        ),
        OSError(122, "Disk quota exceeded"),
    ):
        diagnosis = diagnose((), Failure.of(error))
        assert (diagnosis.error_code, diagnosis.then) == ("DISK_FULL", "fail"), error
        assert "a disk is full" in diagnosis.fix


class _GoneJvmError(Exception):
    """Like py4j's error, which asks the JVM for its message each time it is shown."""

    def __str__(self) -> str:
        raise ConnectionRefusedError(111, "Connection refused")


def test_an_error_whose_message_needs_a_dead_jvm_is_still_diagnosed():
    error = _GoneJvmError("An error occurred while calling o45.collectToPython.\n")
    try:
        raise RuntimeError("the step failed") from error
    except RuntimeError as step_error:
        failure = Failure.of(step_error)
    assert "An error occurred while calling o45.collectToPython." in failure.message
    assert headline(error) == (
        "An error occurred while calling o45.collectToPython. "
        "(the Spark driver did not answer: ConnectionRefusedError)"
    )
