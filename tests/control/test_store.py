"""The control store on SQLite (the embedded default) and on a real PostgreSQL server: schema
created and migrated by the code, flags overridden with their audit entries, the audit log
filtered, and several processes writing at once without losing a row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from medallion_assets.control.store import (
    MIGRATIONS,
    ControlStore,
    ControlStoreError,
)
from medallion_assets.settings import MedallionSettings
from tests.control_store import in_processes


def test_the_schema_is_created_once_and_reports_its_version(url: str):
    store = ControlStore.open(url)
    assert store.schema_version() == len(MIGRATIONS)
    assert ControlStore.open(url).migrate() == len(MIGRATIONS)  # idempotent
    assert store.flags() == [] and store.audit() == []


def test_a_flag_override_replaces_the_previous_one_and_is_audited(url: str):
    store = ControlStore.open(url)
    store.set_flag("dataset", "gold.revenue", False, "bad FX feed", "oncall@x")
    store.set_flag("dataset", "gold.revenue", True, "feed fixed", "oncall@x")
    store.set_flag("source", "orders", False, "SlowDown storm", "sre@x")
    flags = {f.entity: f for f in store.flags()}
    assert set(flags) == {"dataset:gold.revenue", "source:orders"}
    assert (
        flags["dataset:gold.revenue"].enabled
        and flags["dataset:gold.revenue"].reason == "feed fixed"
    )
    assert not flags["source:orders"].enabled and flags["source:orders"].changed_by == "sre@x"
    entries = store.audit()
    assert [(e.kind, e.entity, e.details["enabled"]) for e in entries] == [
        ("flag", "dataset:gold.revenue", False),
        ("flag", "dataset:gold.revenue", True),
        ("flag", "source:orders", False),
    ]
    assert "disabled by sre@x: SlowDown storm" in entries[-1].message
    with pytest.raises(ValueError, match="unknown scope 'table'"):
        store.set_flag("table", "x", False, "", "")


def test_the_audit_log_filters_by_entity_time_and_run(url: str):
    store = ControlStore.open(url)
    first = store.record("run", "dataset:silver.a", "started", run_id="r1")
    store.record("attempt", "dataset:silver.b", "attempt 1 failed", run_id="r1", details={"n": 1})
    later = store.record("outcome", "dataset:silver.a", "published", run_id="r2")
    assert [e.message for e in store.audit(entities=["dataset:silver.a"])] == [
        "started",
        "published",
    ]
    assert [e.message for e in store.audit(since=later.at)] == ["published"]
    assert [e.entity for e in store.audit(run_id="r1")] == ["dataset:silver.a", "dataset:silver.b"]
    assert store.audit(run_id="r1")[1].details == {"n": 1}
    assert [e.message for e in store.audit(limit=1)] == ["published"]
    assert store.audit(entities=[]) == []
    assert first.at < later.at


def _write_many(url: str, worker: int, count: int) -> None:
    store = ControlStore.open(url)
    for i in range(count):
        store.record("attempt", f"dataset:silver.t{worker}", f"attempt {i}", run_id=f"w{worker}")
        if i % 10 == 0:
            store.set_flag("dataset", "silver.shared", i % 20 == 0, f"w{worker} {i}", f"w{worker}")


@pytest.mark.slow
def test_several_processes_migrate_and_write_at_once_without_losing_a_row(url: str):
    workers, count = 4, 40
    in_processes(_write_many, [(url, w, count) for w in range(workers)])
    store = ControlStore(url)
    entries = store.audit()
    attempts = [e for e in entries if e.kind == "attempt"]
    assert len(attempts) == workers * count
    for w in range(workers):
        mine = [e.message for e in attempts if e.run_id == f"w{w}"]
        assert mine == [f"attempt {i}" for i in range(count)]  # each writer's order is kept
    assert len([e for e in entries if e.kind == "flag"]) == workers * (count // 10)
    assert [f.name for f in store.flags()] == ["silver.shared"]


def test_a_newer_schema_or_a_bad_url_is_refused_with_the_fix(tmp_path: Path):
    path = tmp_path / "control.db"
    ControlStore.open(f"sqlite:///{path}")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE medallion_schema SET version = 99")
    with pytest.raises(ControlStoreError, match=r"schema version 99, newer .* upgrade the package"):
        ControlStore.open(f"sqlite:///{path}")
    with pytest.raises(ControlStoreError, match="use sqlite:///PATH or postgresql://"):
        ControlStore("mysql://u:secret@h/db")
    with pytest.raises(ControlStoreError) as refused:
        ControlStore.open("postgresql://u:secret@127.0.0.1:1/db")
    assert "cannot connect" in str(refused.value) and "secret" not in str(refused.value)


def test_the_default_store_is_a_sqlite_file_in_the_state_folder(tmp_path: Path):
    def control_url(env: dict[str, str]) -> str:
        return MedallionSettings.from_env(env, tmp_path).effective_control_url

    assert control_url({}) == f"sqlite:///{(tmp_path / '.medallion' / 'control.db').resolve()}"
    assert control_url({"MEDALLION_HOME": str(tmp_path / "h")}).endswith("/h/control.db")
    assert control_url({"MEDALLION_CONTROL_URL": "postgresql://x/y"}) == "postgresql://x/y"


def test_a_route_override_is_upserted_audited_and_cleared_by_primary(url: str):
    store = ControlStore.open(url)
    store.set_route(
        "bronze.customers", "customers_us_east_replica", "NoSuchBucket", "healing", "r1"
    )
    store.set_route("silver.addresses_validated", "from_customer_profiles", "vendor late", "oncall")
    store.set_route("bronze.customers", "customers_eu_replica", "replica lagging", "oncall", "r2")
    routes = store.routes()
    assert {t: (r.route, r.changed_by, r.run_id) for t, r in routes.items()} == {
        "bronze.customers": ("customers_eu_replica", "oncall", "r2"),
        "silver.addresses_validated": ("from_customer_profiles", "oncall", ""),
    }
    store.set_route("bronze.customers", "primary", "eu-west-1 is back", "oncall")
    assert list(store.routes()) == ["silver.addresses_validated"]
    entries = store.audit(["dataset:bronze.customers"])
    assert [(e.kind, e.details["route"], e.run_id) for e in entries] == [
        ("route", "customers_us_east_replica", "r1"),
        ("route", "customers_eu_replica", "r2"),
        ("route", "primary", ""),
    ]
    assert entries[-1].message == (
        "bronze.customers rerouted to primary by oncall: eu-west-1 is back"
    )
