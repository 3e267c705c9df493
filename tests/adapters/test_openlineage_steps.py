"""OpenLineage events of steps that do not complete, from real Dagster steps on Spark sent to a
real HTTP receiver: a step whose SQL fails at run time sends START then FAIL (with the error)
for each attempt, each attempt its own OpenLineage run under the same Dagster run; a table the
kill switch stops at its boundary sends START then ABORT, saying why."""

from __future__ import annotations

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import load_catalog
from medallion_assets.control_plane import ControlPlane
from tests.adapters.lineage_runs import lineage_runs
from tests.adapters.minimal import minimal_project
from tests.lineage_receiver import check_event, lineage_receiver, openlineage_env

pytestmark = pytest.mark.slow

POLICIES = """
retry_policies:
  quick: {max_retries: 1, delay_seconds: 0.1}
default_retry_policy: quick
"""
# Fails inside a Spark task, at run time, not when the SQL is analysed.
FAILING = "SELECT order_id, amount, raise_error('boom: bad order') AS country FROM bronze.orders\n"


def test_failed_attempts_send_fail_and_a_switched_off_table_sends_abort(
    spark, tmp_path, monkeypatch
):
    root, _store = minimal_project(tmp_path, monkeypatch, {"order_id": 1, "amount": 5})
    (root / "metadata" / "policies.yaml").write_text(POLICIES)
    (root / "sql" / "silver" / "orders_clean.sql").write_text(FAILING)
    catalog = load_catalog(root, use_cache=False)
    job = definitions_for(
        catalog, DatasetTranslator(catalog)
    ).resolve_implicit_global_asset_job_def()
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    instance = dg.DagsterInstance.ephemeral()

    with lineage_receiver() as receiver, openlineage_env(OPENLINEAGE_URL=receiver.url):
        failed = job.execute_in_process(
            asset_selection=[table_key("bronze.orders"), table_key("silver.orders_clean")],
            instance=instance,
            raise_on_error=False,
        )
        plane.store().set_flag("dataset", "gold.revenue", False, "bad numbers", "oncall")
        stopped = job.execute_in_process(
            asset_selection=[table_key("gold.revenue")], instance=instance
        )
    assert not failed.success and stopped.success
    for event in receiver.events:
        check_event(event)
    runs = lineage_runs(receiver.events)
    by_job: dict[str, list[list[str]]] = {}
    for events in runs.values():
        by_job.setdefault(events[0]["job"]["name"], []).append([e["eventType"] for e in events])
    assert by_job["bronze.orders"] == [["START", "COMPLETE"]]
    assert by_job["silver.orders_clean"] == [["START", "FAIL"], ["START", "FAIL"]]  # 1 retry
    assert by_job["gold.revenue"] == [["ABORT"]]  # the kill switch is asked before START

    fails = [e for e in receiver.events if e["eventType"] == "FAIL"]
    assert len({e["run"]["runId"] for e in fails}) == 2
    assert {e["run"]["facets"]["parent"]["run"]["runId"] for e in fails} == {failed.run_id}
    assert [e["run"]["facets"]["medallion"]["attempt"] for e in fails] == [1, 2]
    for event in fails:
        error = event["run"]["facets"]["errorMessage"]
        assert "boom: bad order" in error["message"] and error["programmingLanguage"] == "PYTHON"
    (abort,) = [e for e in receiver.events if e["eventType"] == "ABORT"]
    assert "switched off" in abort["run"]["facets"]["medallion"]["message"]
    assert abort["run"]["facets"]["parent"]["run"]["runId"] == stopped.run_id
