"""Secrets never leave: `medallion run` with a PostgreSQL warehouse and control store whose
roles have passwords full of URL syntax, once loading and once failing to connect, leaves the
passwords in none of stdout, stderr, Dagster's event log, compute logs, materialization
metadata, the audit log or the state folder.

The commands run in this process (on the session's Spark) through click's runner; the file
descriptors are captured too, so what Spark, Java or a library writes around Python counts."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import dagster as dg
import psycopg
import pytest
from click.testing import CliRunner, Result

from medallion_assets.cli import cli
from tests.adapters.minimal import minimal_project, orders

pytestmark = pytest.mark.slow

# Written raw in the warehouse URL, percent-encoded in the control store's.
WAREHOUSE_PASSWORD = "wh/S3C#RET? p@ss:wörd%"
CONTROL_PASSWORD = "ctl/k3y#? s@fe:ß%41"
FRAGMENTS = ("S3C#RET", "p@ss:w", "k3y#?", "s@fe:ß")  # parts a misparsed URL would echo


def leaks(text: str) -> list[str]:
    """Every printed form of either password, or a telling fragment, found in ``text``."""
    forms = set(FRAGMENTS)
    for secret in (WAREHOUSE_PASSWORD, CONTROL_PASSWORD):
        forms |= {secret, quote(secret, safe=""), quote(secret, safe="").lower()}
        forms |= {json.dumps(secret)[1:-1]}
    return sorted(form for form in forms if form in text)


def files_text(folder: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file()
    )


@pytest.fixture
def password_roles(postgres_server):
    """Roles ``loader`` (warehouse) and ``controller`` (control store) that must log in with
    their passwords over TCP (scram-sha-256, ahead of the cluster's trust rule), each owning a
    fresh database."""
    hba = postgres_server.data_dir / "pg_hba.conf"
    original = hba.read_text()
    hba.write_text(
        "host all loader 127.0.0.1/32 scram-sha-256\n"
        "host all controller 127.0.0.1/32 scram-sha-256\n" + original
    )
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        for role, password, database in (
            ("loader", WAREHOUSE_PASSWORD, "secrets_wh"),
            ("controller", CONTROL_PASSWORD, "secrets_ctl"),
        ):
            admin.execute(f"DROP DATABASE IF EXISTS {database}")
            admin.execute(f"DROP ROLE IF EXISTS {role}")
            admin.execute(
                psycopg.sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    psycopg.sql.Identifier(role), psycopg.sql.Literal(password)
                )
            )
            admin.execute(f"CREATE DATABASE {database} OWNER {role}")
        admin.execute("SELECT pg_reload_conf()")
    try:
        yield postgres_server
    finally:
        hba.write_text(original)
        with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_reload_conf()")


def medallion(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_passwords_reach_no_output_log_or_store(
    spark, tmp_path, monkeypatch, capfd, password_roles
):
    server = password_roles
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
    )
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    warehouse = f"postgresql://loader:{WAREHOUSE_PASSWORD}@{server.host}:{server.port}/secrets_wh"
    control = (
        f"postgresql://controller:{quote(CONTROL_PASSWORD, safe='')}"
        f"@{server.host}:{server.port}/secrets_ctl"
    )
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("MEDALLION_WAREHOUSE_URL", warehouse)
    monkeypatch.setenv("MEDALLION_CONTROL_URL", control)
    project = ("--project", str(root))

    loaded = medallion("run", *project)
    assert loaded.exit_code == 0, loaded.output
    with psycopg.connect(
        host=server.host, port=server.port, dbname="secrets_wh", user="loader",
        password=WAREHOUSE_PASSWORD,
    ) as check:  # fmt: skip
        assert check.execute("SELECT count(*) FROM analytics.revenue").fetchone() == (1,)

    # A new order to load, into a warehouse on a port nothing listens on: the run stops before
    # any step, in one line naming the URL (masked). The same error inside a step, in Dagster's
    # event log: tests/adapters/test_masking.py.
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "fr"})
    )
    monkeypatch.setenv("MEDALLION_WAREHOUSE_URL", warehouse.replace(f":{server.port}/", ":1/"))
    failed = medallion("run", *project)
    assert failed.exit_code == 2, failed.output
    assert "cannot reach the warehouse (MEDALLION_WAREHOUSE_URL)" in failed.stderr
    monkeypatch.setenv("MEDALLION_CONTROL_URL", control.replace(f":{server.port}/", ":1/"))
    wrong_store = medallion("control", "status", *project)
    assert wrong_store.exit_code == 2
    assert "cannot connect to the control store" in wrong_store.stderr
    monkeypatch.setenv("MEDALLION_WAREHOUSE_URL", warehouse)
    monkeypatch.setenv("MEDALLION_CONTROL_URL", control)
    audit = medallion("audit", "--format", "json", *project)
    assert audit.exit_code == 0, audit.output
    descriptors = capfd.readouterr()

    instance = dg.DagsterInstance.from_config(str(home))
    runs = instance.get_runs()
    records = [r for run in runs for r in instance.all_logs(run.run_id)]
    events = "\n".join(dg.serialize_value(r) for r in records)
    metadata = [
        r.asset_materialization.metadata for r in records if r.asset_materialization is not None
    ]
    printed = "\n".join(
        [r.stdout + r.stderr for r in (loaded, failed, wrong_store, audit)]
        + [descriptors.out, descriptors.err]
    )
    masked_url = f"postgresql://loader:***@{server.host}:1/secrets_wh"
    # The failure path really echoed the URL, masked.
    assert masked_url in failed.stderr and masked_url in printed
    assert len(runs) >= 1 and len(metadata) >= 3  # 3 tables; the second run stopped before
    assert "postgresql://controller:***@" in wrong_store.stderr

    assert leaks(printed) == []
    assert leaks(events) == []
    assert leaks(json.dumps([{k: str(v) for k, v in m.items()} for m in metadata])) == []
    assert leaks(files_text(home)) == []  # compute logs, run and event log databases
    assert leaks(audit.stdout) == []
    assert leaks(files_text(root / ".medallion")) == []  # lake state, markers, local S3
