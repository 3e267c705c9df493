"""A control store made by the code before SQLAlchemy (its hand-written DDL, written out here
as it was) migrates forward in place on SQLite and PostgreSQL: no flag, route, audit entry or
exported catalog row is lost, new audit entries follow the old ones, and several processes
opening the old store at once migrate it once."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest

from medallion_assets.control.migrations import LATEST
from medallion_assets.control.store import ControlStore
from tests.control_store import in_processes

# The schema as the code before SQLAlchemy created it: version i = the statements of 1..i.
OLD_DDL: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE control_flag_overrides (scope TEXT NOT NULL, name TEXT NOT NULL, "
        "enabled BOOLEAN NOT NULL, reason TEXT NOT NULL, changed_by TEXT NOT NULL, "
        "changed_at TEXT NOT NULL, PRIMARY KEY (scope, name))",
        "CREATE TABLE audit_log (id {identity}, at TEXT NOT NULL, kind TEXT NOT NULL, "
        "entity TEXT NOT NULL, run_id TEXT NOT NULL, message TEXT NOT NULL, "
        "details TEXT NOT NULL)",
        "CREATE INDEX audit_log_at ON audit_log (at)",
        "CREATE INDEX audit_log_entity ON audit_log (entity, at)",
    ),
    2: (
        "CREATE TABLE pipelines (id TEXT, description TEXT, enabled BOOLEAN, schedule TEXT, "
        "owners TEXT, tags TEXT, retry_policy TEXT, datasets TEXT, PRIMARY KEY (id))",
        "CREATE TABLE stages (dataset TEXT, layer TEXT, sql_path TEXT, dialect TEXT, "
        "statement TEXT, system TEXT, criticality TEXT, owners TEXT, tags TEXT, "
        "pii_columns TEXT, partitions TEXT, retry_policy TEXT, code_version TEXT, "
        "upstream TEXT, PRIMARY KEY (dataset))",
        "CREATE TABLE sources (name TEXT, system TEXT, bucket TEXT, prefix TEXT, format TEXT, "
        "partition_pattern TEXT, columns TEXT, pii_columns TEXT, replicas TEXT, "
        "PRIMARY KEY (name))",
        "CREATE TABLE targets (dataset TEXT, system TEXT, warehouse_table TEXT, mode TEXT, "
        "definition TEXT, PRIMARY KEY (dataset))",
        "CREATE TABLE validation_rules (dataset TEXT, name TEXT, kind TEXT, severity TEXT, "
        "blocking BOOLEAN, description TEXT, definition TEXT, PRIMARY KEY (dataset, name))",
        "CREATE TABLE control_flags (scope TEXT, name TEXT, enabled BOOLEAN, reason TEXT, "
        "changed_by TEXT, changed_at TEXT, origin TEXT, PRIMARY KEY (scope, name))",
        "CREATE TABLE retry_policies (name TEXT, max_retries INTEGER, delay_seconds {real}, "
        "backoff TEXT, jitter TEXT, max_delay_seconds {real}, is_default BOOLEAN, "
        "PRIMARY KEY (name))",
        "CREATE TABLE healing_actions (position INTEGER, name TEXT, exception TEXT, "
        "message TEXT, sqlstate TEXT, error_code TEXT, actions TEXT, then_action TEXT, "
        "description TEXT, PRIMARY KEY (position))",
        "CREATE TABLE dataset_lineage (upstream TEXT, downstream TEXT, columns TEXT, "
        "PRIMARY KEY (upstream, downstream))",
    ),
    3: (
        "CREATE TABLE route_overrides (dataset TEXT NOT NULL PRIMARY KEY, route TEXT NOT NULL, "
        "reason TEXT NOT NULL, changed_by TEXT NOT NULL, changed_at TEXT NOT NULL, "
        "run_id TEXT NOT NULL)",
    ),
}
TYPES = {
    "sqlite": {"identity": "INTEGER PRIMARY KEY AUTOINCREMENT", "real": "REAL"},
    "postgresql": {
        "identity": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        "real": "DOUBLE PRECISION",
    },
}


@contextmanager
def raw(url: str) -> Iterator[tuple[Any, str]]:
    """A driver connection to the store's database and its placeholder, without SQLAlchemy."""
    if url.startswith("sqlite:///"):
        path = Path(url.removeprefix("sqlite:///"))
        path.parent.mkdir(parents=True, exist_ok=True)
        connection: Any = sqlite3.connect(path)
        mark = "?"
    else:
        connection = psycopg.connect(url)
        mark = "%s"
    try:
        yield connection, mark
        connection.commit()
    finally:
        connection.close()


def make_old_store(url: str, version: int) -> None:
    """A store at ``version`` as the old code left it, with a flag, audit entries, and (from
    version 2 and 3) an exported catalog row and a route."""
    dialect = "sqlite" if url.startswith("sqlite") else "postgresql"
    with raw(url) as (db, mark):
        db.execute("CREATE TABLE medallion_schema (version INTEGER NOT NULL)")
        for step in range(1, version + 1):
            for statement in OLD_DDL[step]:
                db.execute(statement.format(**TYPES[dialect]))
        db.execute(f"INSERT INTO medallion_schema (version) VALUES ({mark})", (version,))
        flag = f"INSERT INTO control_flag_overrides VALUES ({', '.join([mark] * 6)})"
        db.execute(flag, ("dataset", "gold.revenue", False, "50% off? no", "oncall", "2026-01-01"))
        entry = (
            "INSERT INTO audit_log (at, kind, entity, run_id, message, details) "
            f"VALUES ({', '.join([mark] * 6)})"
        )
        for i in range(3):
            db.execute(entry, (f"2026-01-0{i + 1}", "flag", "dataset:x", "r", f"old {i}", "{}"))
        if version >= 2:
            db.execute(f"INSERT INTO sources (name, system) VALUES ({mark}, {mark})", ("o", "s3"))
        if version >= 3:
            route = f"INSERT INTO route_overrides VALUES ({', '.join([mark] * 6)})"
            db.execute(route, ("bronze.customers", "eu_replica", "lag", "oncall", "2026", "r1"))


@pytest.mark.parametrize("version", [1, 3])
def test_an_old_store_migrates_forward_keeping_every_row(url: str, version: int):
    make_old_store(url, version)
    store = ControlStore.open(url)
    assert store.schema_version() == LATEST
    (flag,) = store.flags()
    assert (flag.entity, flag.enabled, flag.reason) == (
        "dataset:gold.revenue",
        False,
        "50% off? no",
    )
    old = store.audit()
    assert [(e.id, e.message) for e in old] == [(1, "old 0"), (2, "old 1"), (3, "old 2")]
    if version >= 3:
        assert store.routes()["bronze.customers"].route == "eu_replica"
    if version >= 2:
        assert store.query("SELECT name, system FROM sources") == [("o", "s3")]
    # The migrated store works as a new one: new entries follow the old ones.
    store.set_flag("dataset", "gold.revenue", True, "fixed", "oncall")
    store.state.cut_throttle("s3_raw", 1000.0, "S3_THROTTLED")
    assert [e.id for e in store.audit()] == [1, 2, 3, 4, 5]
    assert store.state.throttle_factor("s3_raw", 1000.0) == 0.5


def _open(url: str) -> None:
    ControlStore.open(url).record("run", "run", "opened")


@pytest.mark.slow  # spawns processes that import the package
def test_processes_opening_an_old_store_at_once_migrate_it_once(url: str):
    make_old_store(url, 3)
    in_processes(_open, [(url,)] * 3)
    store = ControlStore(url)
    assert store.schema_version() == LATEST
    assert store.query("SELECT count(*) FROM medallion_schema") == [(1,)]
    assert [e.message for e in store.audit()] == ["old 0", "old 1", "old 2", *["opened"] * 3]
