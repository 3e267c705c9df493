"""Retry and self-healing inside real Dagster steps on Spark, with real faults: a permanent
error fails fast without retries and says why; every attempt, error, action and outcome is in
the audit log."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import load_catalog
from tests.adapters.minimal import minimal_job
from tests.lake_helpers import abandon_staged_output, publish_frame, staging_branches

pytestmark = pytest.mark.slow

POLICIES = """
retry_policies:
  quick: {max_retries: 2, delay_seconds: 0.1, backoff: exponential}
default_retry_policy: quick
healing_rules:
  - name: missing_column
    match: {message: "UNRESOLVED_COLUMN|cannot be resolved"}
    error_code: SQL_MISSING_COLUMN
    then: fail
  - name: leftovers
    match: {message: "staging leftovers"}
    error_code: STAGING_LEFTOVERS
    actions: [clear_staging]
    then: retry
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    return minimal_job(tmp_path, monkeypatch, POLICIES)


def with_rule(root: Path, name: str, message: str, code: str, action: str):
    """The project's job after adding one healing rule (then: retry) to its policies."""
    rule = (
        f'  - name: {name}\n    match: {{message: "{message}"}}\n    error_code: {code}\n'
        f"    actions: [{action}]\n    then: retry\n"
    )
    (root / "metadata" / "policies.yaml").write_text(POLICIES + rule)
    catalog = load_catalog(root, use_cache=False)
    return definitions_for(
        catalog, DatasetTranslator(catalog)
    ).resolve_implicit_global_asset_job_def()


def events(result, kind: str) -> list:
    return [e for e in result.all_events if e.event_type_value == kind]


def test_a_permanent_error_fails_fast_without_retries_and_says_why(spark, project):
    _catalog, job, lake, plane = project
    instance = dg.DagsterInstance.ephemeral()
    bronze = [table_key("bronze.orders")]
    assert job.execute_in_process(asset_selection=bronze, instance=instance).success
    # The upstream's published version loses a column the silver SQL reads.
    current = lake.current("bronze.orders")
    frame = lake.read(spark, [current]).drop("country")
    publish_frame(lake, spark, frame, "bronze.orders", current.code_version, current.inputs)

    result = job.execute_in_process(
        asset_selection=[table_key("silver.orders_clean")], instance=instance, raise_on_error=False
    )
    assert not result.success
    assert not events(result, "STEP_UP_FOR_RETRY")  # the policy allows 2 retries; none taken
    (failure,) = events(result, "STEP_FAILURE")
    message = failure.event_specific_data.error.message
    assert "SQL_MISSING_COLUMN is permanent (healing rule missing_column)" in message
    assert "country" in message
    log = plane.store().audit(entities=["dataset:silver.orders_clean"])
    assert [e.kind for e in log] == ["attempt", "error", "outcome"]
    assert log[1].details["rule"] == "missing_column" and log[1].details["then"] == "fail"
    assert "failed fast: SQL_MISSING_COLUMN, not retried" in log[2].message
    assert all(e.run_id == result.run_id for e in log)


def test_a_transient_error_is_healed_then_retried_with_backoff(spark, project, monkeypatch):
    _catalog, job, lake, plane = project
    from medallion_assets.runtime import table_build as build_module

    real = build_module.register_inputs
    calls = {"n": 0}

    def leaves_leftovers_once(spark, lake, catalog, dataset, partition):
        calls["n"] += 1
        if calls["n"] == 1:  # a crashed attempt's staging output, then the crash
            abandon_staged_output(
                lake, spark, dataset, real(spark, lake, catalog, dataset, partition)
            )
            raise RuntimeError("staging leftovers from a crashed attempt")
        return real(spark, lake, catalog, dataset, partition)

    monkeypatch.setattr(build_module, "register_inputs", leaves_leftovers_once)
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral())
    assert result.success
    assert len(events(result, "STEP_UP_FOR_RETRY")) == 1
    assert lake.current("gold.revenue") is not None
    assert staging_branches(lake, "silver.orders_clean") == []  # cleared, then published
    log = plane.store().audit(entities=["dataset:silver.orders_clean"])
    assert [e.kind for e in log] == ["attempt", "error", "healing", "retry", "attempt", "outcome"]
    assert log[1].message.endswith(
        "STAGING_LEFTOVERS (RuntimeError): staging leftovers from a crashed attempt"
    )
    assert log[2].message.endswith(
        "clear_staging: removed 1 leftover staging branch(es) of silver.orders_clean"
    )
    assert [e.details["attempt"] for e in log] == [1, 1, 1, 1, 2, 2]


def test_a_warehouse_connection_killed_mid_load_is_refreshed_and_the_load_retried(
    spark, project, postgres_server, monkeypatch
):
    import threading
    import time

    import psycopg

    from tests.adapters.minimal import orders

    catalog, _job, _lake, plane = project
    root = catalog.root
    monkeypatch.setenv("MEDALLION_WAREHOUSE_URL", postgres_server.dsn)
    killed_message = "terminating connection|server closed the connection|connection is lost"
    job = with_rule(
        root, "connection_killed", killed_message, "CONNECTION_RESET", "refresh_connection"
    )
    instance = dg.DagsterInstance.ephemeral()
    assert job.execute_in_process(instance=instance).success

    from medallion_assets.io.object_store import LocalFolderObjectStore

    store = LocalFolderObjectStore(root / ".medallion" / "s3")
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "fr"})
    )
    killed: list[int] = []

    def kill_the_blocked_load(locker: psycopg.Connection) -> None:
        """Wait for the load to queue behind our lock, terminate its backend, then let go."""
        with psycopg.connect(postgres_server.dsn, autocommit=True) as watcher:
            for _ in range(600):
                rows = watcher.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND pid <> pg_backend_pid()"
                ).fetchall()
                if rows:
                    for (pid,) in rows:
                        watcher.execute("SELECT pg_terminate_backend(%s)", (pid,))
                        killed.append(pid)
                    break
                time.sleep(0.1)
        locker.rollback()

    with psycopg.connect(postgres_server.dsn) as locker:
        locker.execute("LOCK TABLE analytics.revenue IN ACCESS EXCLUSIVE MODE")
        thread = threading.Thread(target=kill_the_blocked_load, args=(locker,))
        thread.start()
        second = job.execute_in_process(instance=instance, raise_on_error=False)
        thread.join(timeout=120)

    assert killed, "the load never queued behind the lock"
    assert second.success
    assert len(events(second, "STEP_UP_FOR_RETRY")) == 1
    with psycopg.connect(postgres_server.dsn) as check:
        rows = check.execute(
            "SELECT country, revenue FROM analytics.revenue ORDER BY country"
        ).fetchall()
    assert [(c, float(r)) for c, r in rows] == [("DE", 5.0), ("FR", 7.0)]  # complete, no duplicates
    log = [
        e
        for e in plane.store().audit(entities=["dataset:gold.revenue"])
        if e.run_id == second.run_id
    ]
    kinds = [e.kind for e in log]
    assert kinds == ["attempt", "error", "healing", "retry", "attempt", "load", "outcome"]
    assert "CONNECTION_RESET" in log[1].message
    assert log[2].details["action"] == "refresh_connection"
    (load,) = plane.state().latest_loads()  # recorded once, after the warehouse committed
    assert (load.dataset, load.warehouse_table, load.rows) == (
        "gold.revenue",
        "analytics.revenue",
        2,
    )
    assert load.run_id == second.run_id and log[5].details["lake_version"] == load.lake_version


def test_a_new_column_in_the_raw_files_is_evolved_then_ingested(spark, project):
    from medallion_assets.io.object_store import LocalFolderObjectStore
    from medallion_assets.runtime.ingest.schema_drift import evolved_columns
    from tests.adapters.minimal import orders

    catalog, _job, lake, plane = project
    root = catalog.root
    job = with_rule(root, "schema_mismatch", "schema mismatch", "SCHEMA_MISMATCH", "evolve_schema")
    instance = dg.DagsterInstance.ephemeral()
    assert job.execute_in_process(instance=instance).success
    store = LocalFolderObjectStore(root / ".medallion" / "s3")
    drifted = {"order_id": 2, "coupon": "WELCOME10", "amount": 7, "country": "fr"}
    store.put("minimal-raw", "orders/b.jsonl", orders(drifted))

    result = job.execute_in_process(instance=instance, raise_on_error=False)
    assert result.success
    assert len(events(result, "STEP_UP_FOR_RETRY")) == 1
    assert lake.current("bronze.orders").rows == 2 and lake.current("gold.revenue") is not None
    assert evolved_columns(plane.state(), "orders") == [("coupon", "string")]
    (evolved,) = [e for e in plane.store().audit(["source:orders"]) if e.kind == "schema"]
    assert (evolved.run_id, evolved.details) == (result.run_id, {"added": ["coupon"]})
    log = [
        e
        for e in plane.store().audit(entities=["dataset:bronze.orders"])
        if e.run_id == result.run_id
    ]
    assert [e.kind for e in log] == ["attempt", "error", "healing", "retry", "attempt", "outcome"]
    assert "SCHEMA_MISMATCH" in log[1].message and "coupon in b.jsonl" in log[1].message
    assert log[2].message.endswith(
        "evolve_schema: source orders: added nullable string column(s) coupon"
    )


def test_csv_files_are_read_by_their_headers_names(spark, tmp_path):
    """A column inserted in the middle of a CSV file, once evolved, lands in its own column
    and does not shift the others; files with the old header read as before."""
    from medallion_assets.catalog.sources import Source
    from medallion_assets.runtime.ingest.raw_read import RawFile, read_objects

    old = tmp_path / "old.csv"
    old.write_text("order_id,amount,country\n1,5,de\n")
    new = tmp_path / "new.csv"
    new.write_text("order_id,coupon,amount,country\n2,WELCOME10,7,fr\n")
    source = Source.model_validate(
        {
            "system": "s3_raw",
            "bucket": "raw-bucket",
            "prefix": "orders/",
            "format": "csv",
            "columns": [
                {"name": "order_id", "type": "bigint"},
                {"name": "amount", "type": "int"},
                {"name": "country", "type": "string"},
            ],
        }
    )
    files = [
        RawFile(f"file:{p}", f"s3://raw-bucket/orders/{p.name}", 0.0, "r", header)
        for p, header in [
            (old, ("order_id", "amount", "country")),
            (new, ("order_id", "coupon", "amount", "country")),
        ]
    ]
    records = read_objects(spark, source, files, [("coupon", "string")])
    good, total = records.good, records.total
    rows = sorted(
        tuple(r) for r in good.select("order_id", "coupon", "amount", "country").collect()
    )
    assert total == 2
    assert rows == [(1, None, 5, "de"), (2, "WELCOME10", 7, "fr")]
