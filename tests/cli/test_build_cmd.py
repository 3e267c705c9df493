"""``medallion build TABLE``: one table's step as one run, as an orchestrator's task runs it.

Its exit code is what the orchestrator acts on: 0 built or unchanged; 1 failed, another attempt
may succeed; 3 another attempt would not (a blocking check, a permanent error). With
``--no-retry`` (what ``medallion export`` writes, the orchestrator retrying the task with
policies.yaml's retries) the step makes one attempt: it heals, then fails where it would have
retried, so the retries are not the orchestrator's times medallion's."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from medallion_assets.cli import cli
from medallion_assets.control_plane import ControlPlane
from medallion_assets.lake import Lake
from tests.adapters.minimal import minimal_project, orders
from tests.lake_helpers import abandon_staged_output, data_files

pytestmark = pytest.mark.slow

POLICIES = """
retry_policies:
  quick: {max_retries: 2, delay_seconds: 0.1}
default_retry_policy: quick
healing_rules:
  - name: leftovers
    match: {message: "staging leftovers"}
    error_code: STAGING_LEFTOVERS
    actions: [clear_staging]
    then: retry
"""
SILVER = "silver.orders_clean"


@pytest.fixture
def project(tmp_path, monkeypatch):
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
    )
    (root / "metadata" / "policies.yaml").write_text(POLICIES)
    monkeypatch.setenv("MEDALLION_SPARK_LOG", str(tmp_path / "spark.log"))  # as build sets it
    return root, store


def build(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["build", *args, "--project", str(root)])


def audit_of(root: Path, table: str) -> list:
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    return plane.store().audit(entities=[f"dataset:{table}"])


def test_build_publishes_one_table_then_finds_it_unchanged(spark, project, monkeypatch):
    from medallion_assets.catalog import loader

    root, _store = project
    lake = Lake.local(root / ".medallion" / "lake")
    discover, loads = loader.discover_sql, []

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        loads.append(1)
        return discover(*args, **kwargs)

    monkeypatch.setattr(loader, "discover_sql", counted)
    done = build(root, "bronze.orders")
    assert done.exit_code == 0, done.output
    assert len(loads) == 1  # the project is loaded once: preflight and the run share it
    assert lake.current("bronze.orders") is not None and lake.current(SILVER) is None
    assert build(root, SILVER).exit_code == 0
    version = lake.current(SILVER)
    assert version is not None and version.rows == 1
    again = build(root, SILVER)
    assert again.exit_code == 0 and "unchanged" in again.output
    assert lake.current(SILVER) == version

    wrong = build(root, SILVER, "--partition", "2026-01-01")
    assert wrong.exit_code != 0 and f"{SILVER} has no days: leave --partition out" in wrong.output
    missing = build(root, "silver.nope")
    assert missing.exit_code != 0 and "silver.nope is not a table of the project" in missing.output


def fail_once_then_build(monkeypatch) -> dict[str, int]:
    """The silver step's first attempt crashes leaving staging output behind (a transient
    error the clear_staging action heals); later attempts build."""
    from medallion_assets.runtime import table_build as build_module

    real = build_module.register_inputs
    calls = {"n": 0}

    def crashes_once(spark, lake, catalog, dataset, partition):
        if dataset.name == SILVER:
            calls["n"] += 1
            if calls["n"] == 1:
                abandon_staged_output(
                    lake, spark, dataset, real(spark, lake, catalog, dataset, partition)
                )
                raise RuntimeError("staging leftovers from a crashed attempt")
        return real(spark, lake, catalog, dataset, partition)

    monkeypatch.setattr(build_module, "register_inputs", crashes_once)
    return calls


def test_no_retry_heals_makes_one_attempt_and_leaves_the_retry_to_the_orchestrator(
    spark, project, monkeypatch
):
    root, _store = project
    assert build(root, "bronze.orders").exit_code == 0
    calls = fail_once_then_build(monkeypatch)

    done = build(root, SILVER, "--no-retry")
    assert done.exit_code == 1, done.output  # worth another attempt
    assert calls["n"] == 1  # one attempt, though the policy allows two retries
    log = audit_of(root, SILVER)
    assert [e.kind for e in log] == ["attempt", "error", "healing", "outcome"]
    assert "clear_staging: removed 1 leftover staging branch" in log[2].message
    assert log[3].message.endswith("STAGING_LEFTOVERS; the orchestrator retries")
    said = " ".join(done.output.split())  # the FAILED section wraps between words
    assert "the orchestrator running medallion build --no-retry retries it" in said

    # the orchestrator's retry: a new process, the healing already done (without --no-retry the
    # step retries itself: tests/adapters/test_healing.py's transient error)
    assert build(root, SILVER, "--no-retry").exit_code == 0
    assert Lake.local(root / ".medallion" / "lake").current(SILVER) is not None


def test_a_blocked_table_exits_3(spark, project):
    root, store = project
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 1, "country": "xx"})
    )
    assert build(root, "bronze.orders").exit_code == 0
    blocked = build(root, SILVER, "--no-retry")
    assert blocked.exit_code == 3, blocked.output  # the same data would be blocked again
    assert "BLOCKED" in blocked.output and "accepted_values" in blocked.output


def test_a_permanent_error_exits_3(spark, project):
    root, _store = project
    assert build(root, "bronze.orders").exit_code == 0
    lake = Lake.local(root / ".medallion" / "lake")
    part = data_files(lake, lake.current("bronze.orders"))[0]
    folder = part.parent
    part.write_bytes(b"")  # a corrupt lake file: no attempt reads it
    (folder / f".{part.name}.crc").unlink(missing_ok=True)
    corrupt = build(root, SILVER, "--no-retry")
    assert corrupt.exit_code == 3, corrupt.output
    assert "CORRUPT_OBJECT is permanent" in corrupt.output
