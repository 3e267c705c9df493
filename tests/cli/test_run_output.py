"""What `medallion run` tells its user: a progress line per table, statuses that separate built,
unchanged, blocked and not-run tables, rows written by this run only, one clear report of a
blocking check (no traceback), and a rerun of a blocked table that rebuilds nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from medallion_assets.cli import cli
from medallion_assets.control_plane import ControlPlane
from medallion_assets.lake import Lake
from tests.adapters.minimal import minimal_project, orders

pytestmark = pytest.mark.slow


def medallion_run(root: Path, exit_code: int = 0, *options: str) -> str:
    result = CliRunner().invoke(cli, ["run", "--project", str(root), *options])
    assert result.exit_code == exit_code, result.output
    return result.output


def kept_outputs(lake: Lake, table: str) -> dict[str, int]:
    """The staging branches and the tags of rejected outputs on ``table``, with snapshots."""
    from medallion_assets.lake import tables, versions

    loaded = versions.load(versions.open_catalog(lake.catalog), table)
    prefixes = (tables.STAGE_BRANCH, tables.REJECTED_TAG)
    refs = loaded.metadata.refs.items() if loaded is not None else ()
    return {n: r.snapshot_id for n, r in refs if n.startswith(prefixes)}


def test_a_run_reports_each_table_and_a_rerun_of_a_blocked_table_rebuilds_nothing(
    spark, tmp_path, monkeypatch
):
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "DE"}
    )
    lake = Lake.local(root / ".medallion" / "lake")

    first = medallion_run(root)
    assert "[1/3] bronze.orders" in first and "[3/3] gold.revenue" in first
    assert "3 built; 3 rows written by this run" in first

    # The next delivery carries a country code the blocking rule does not accept.
    store.put("minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "X"}))
    # Blocked means what it means in Dagster (the step failed): exit 3, as `medallion build`.
    second = medallion_run(root, 3)
    assert "error: blocking checks kept 1 table(s) from publishing" in second
    assert "Traceback" not in second and "dagster - ERROR" not in second
    assert "[2/3] silver.orders_clean" in second and "blocked" in second
    report = second[second.index("BLOCKED:") :]
    assert "accepted_values_country (accepted_values)" in report and "(1 failing rows)" in report
    assert 'sample failing row: {"order_id": 2' in report
    assert "stays current" in report
    assert "NOT RUN: an upstream table did not publish" in second and "gold.revenue" in second
    # bronze appended the one new record: the run wrote 1 row (the table now holds 2)
    assert "1 built, 1 blocked, 1 not run; 1 row written by this run" in second
    rejected = kept_outputs(lake, "silver.orders_clean")
    assert list(rejected) == ["medallion_rejected_table"]  # kept under a tag, no branch left

    third = medallion_run(root, 0, "--allow-blocked")
    assert "still blocked since" in third and "code and inputs unchanged, not rebuilt" in third
    assert "nothing published: 1 unchanged, 1 blocked, 1 not run; 0 rows written" in third
    assert kept_outputs(lake, "silver.orders_clean") == rejected  # nothing was rebuilt

    # bronze.orders had nothing new and reads nothing rebuilt: kept without a step, and said
    store = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root).store()
    bronze = [e for e in store.audit(entities=["dataset:bronze.orders"]) if e.kind == "outcome"]
    assert bronze[-1].message == "bronze.orders: materialized on attempt 1"  # the second run's
    kept = [e.message for e in store.audit(entities=["project:minimal"]) if e.kind == "outcome"]
    assert kept[-1].startswith("1 table(s) and day(s) unchanged, no step started for them")
    assert "1 table(s) and day(s) unchanged, no step started for them" in third


def test_raw_objects_set_aside_are_named_with_their_reason_on_the_console(
    spark, tmp_path, monkeypatch
):
    import gzip

    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "DE"}
    )
    store.put("minimal-raw", "orders/empty.jsonl", b"")
    store.put("minimal-raw", "orders/zipped.jsonl", gzip.compress(orders({"order_id": 2})))

    printed = medallion_run(root)

    section = printed[printed.index("SET ASIDE: raw objects not ingested") :]
    lines = section.splitlines()[1:3]
    assert lines[0].startswith("  bronze.orders: orders/empty.jsonl: ") and "empty" in lines[0]
    assert lines[1].startswith("  bronze.orders: orders/zipped.jsonl: ") and "gzip" in lines[1]
    assert "3 built; 3 rows written by this run" in printed  # the good one was read


def test_a_copy_skipped_and_a_late_column_evolved_are_said_on_the_console(
    spark, tmp_path, monkeypatch
):
    """A byte-identical copy under a new key is named, not skipped without a word; a column
    first appearing late in an object is drift, and the retry line says what the healing did
    about it (not Dagster's bare RetryRequested)."""
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "DE"}
    )
    policies = root / "metadata" / "policies.yaml"
    policies.write_text(
        policies.read_text() + "  - name: schema_mismatch\n    match: {message: schema mismatch}\n"
        "    error_code: SCHEMA_MISMATCH\n    actions: [evolve_schema]\n    then: retry\n"
    )
    medallion_run(root)
    records = [{"order_id": i, "amount": 1, "country": "DE"} for i in range(2, 402)]
    records[300]["coupon"] = "LATE"  # record 301 of 400: after any sample
    late = orders(*records)
    store.put("minimal-raw", "orders/b.jsonl", late)
    store.put("minimal-raw", "orders/b_again.jsonl", late)

    printed = medallion_run(root)

    retry = next(line for line in printed.splitlines() if "bronze.orders: retrying: " in line)
    assert "evolve_schema: source orders: added nullable string column(s) coupon" in retry
    assert "SCHEMA_MISMATCH: schema mismatch: source orders has new column(s) coupon" in retry
    assert "RetryRequested" not in printed
    section = printed[printed.index("SKIPPED COPIES: ") :].splitlines()
    assert section[1] == (
        "  bronze.orders: orders/b_again.jsonl: the same content as orders/b.jsonl, ingested before"
    )


def test_a_library_logging_a_traceback_on_the_root_logger_goes_to_the_log_not_the_console(
    tmp_path,
):
    """py4j logs ``Exception while sending command.`` with its traceback on Python's root
    logger when the Spark driver dies under a call; without a root handler Python prints it
    on stderr, between the run's lines."""
    import subprocess
    import sys

    script = (
        "import logging, sys\n"
        "from pathlib import Path\n"
        "from medallion_assets.cli.run_cmd import with_spark_log\n"
        "from medallion_assets.settings import MedallionSettings\n"
        "settings = MedallionSettings.from_env({'MEDALLION_HOME': sys.argv[1]})\n"
        "with_spark_log(settings)\n"
        "try:\n"
        "    raise ConnectionResetError('peer went away, password=hunter2')\n"
        "except ConnectionResetError:\n"
        "    logging.exception('Exception while sending command.')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    logged = (tmp_path / "logs/python.log").read_text()
    assert "Exception while sending command." in logged and "Traceback" in logged


def failing_revenue(tmp_path: Path, monkeypatch, sql: str) -> tuple[Path, str]:  # type: ignore[no-untyped-def]
    """The minimal project with ``sql`` as gold.revenue, run (exit 1): (its root, the output)."""
    root, _store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "DE"}
    )
    # `medallion run` points Spark's log at its project through the environment (for the run's
    # resources): an earlier test's run in this process left its own there.
    monkeypatch.delenv("MEDALLION_SPARK_LOG", raising=False)
    (root / "sql/gold/revenue.sql").write_text(sql)
    return root, medallion_run(root, 1)


def test_a_failing_cast_is_one_whole_message_and_its_java_record_goes_to_the_spark_log(
    spark, tmp_path, monkeypatch
):
    """Spark logs a failed query's context (the whole Java stack trace, as JSON) on stderr
    through its own logger; the console keeps the one reason, whole, wrapped between words."""
    import logging

    root, printed = failing_revenue(
        tmp_path,
        monkeypatch,
        "SELECT country, sum(amount) AS revenue, CAST(country AS INT) AS n\n"
        "FROM silver.orders_clean GROUP BY country\n",
    )

    assert "starting Spark (" in printed and "Spark started in" in printed
    assert "SQLQueryContextLogger" not in printed and "\tat org.apache" not in printed
    assert "Traceback" not in printed
    failed = printed[printed.index("FAILED:") : printed.index("Open the asset graph")]
    assert "  gold.revenue: DATA_ERROR is permanent" in failed  # its name said once
    assert "[CAST_INVALID_INPUT]" in failed and "…" not in failed  # the message whole
    assert all(len(line) <= 100 for line in failed.splitlines())
    logged = (root / ".medallion/logs/spark.log").read_text()
    assert "SQLQueryContextLogger" in logged and "CAST_INVALID_INPUT" in logged
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        handlers = logging.getLogger(name).handlers
        assert handlers and all(type(h) is not logging.StreamHandler for h in handlers)


def test_a_spark_analysis_error_names_the_file_line_and_column_and_is_not_retried(
    spark, tmp_path, monkeypatch
):
    """A mistake only Spark finds (a function it does not know) is reported at its place in
    the SQL file, with Spark's error class and message whole, not the rewritten statement's
    "line 1 pos N"; and it fails at once (the same SQL fails the same way)."""
    _root, printed = failing_revenue(
        tmp_path,
        monkeypatch,
        "SELECT country,\n"
        "       sum(amount) AS revenue,\n"
        "       no_such_function(country) AS odd\n"
        "FROM silver.orders_clean GROUP BY country\n",
    )
    failed = " ".join(
        printed[printed.index("FAILED:") : printed.index("Open the asset graph")].split()
    )
    assert "SQL_ANALYSIS is permanent" in failed
    assert "sql/gold/revenue.sql:3:8: [UNRESOLVED_ROUTINE]" in failed, failed
    assert "`NO_SUCH_FUNCTION` on search path" in failed and "line 1 pos" not in failed, failed
    assert "failing without retries" in failed
