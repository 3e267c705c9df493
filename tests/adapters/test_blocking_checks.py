"""A blocking check failing inside a real Dagster run on Spark: nothing is published, the previous
version stays current and readable, the downstream asset does not run, and the run says why."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.translator import DatasetTranslator
from medallion_assets.catalog import load_catalog
from medallion_assets.lake import Lake
from medallion_assets.testing import read_table
from tests.adapters.minimal import minimal_project, orders

pytestmark = pytest.mark.slow


def run_all(job, instance):
    result = job.execute_in_process(instance=instance, raise_on_error=False)
    started = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
    checks = {
        e.event_specific_data.check_name: e.event_specific_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    return result, started, checks


def test_a_failed_blocking_check_publishes_nothing_and_stops_downstream(
    spark, tmp_path, monkeypatch
):
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "DE"}
    )
    home = root / ".medallion"
    catalog = load_catalog(root, use_cache=False)
    job = definitions_for(
        catalog, DatasetTranslator(catalog)
    ).resolve_implicit_global_asset_job_def()
    instance = dg.DagsterInstance.ephemeral()

    first, _, checks = run_all(job, instance)
    assert first.success
    assert checks["accepted_values_country"].passed
    lake = Lake.local(home / "lake")
    published = lake.current("silver.orders_clean")

    # The next delivery carries a country code the rule does not accept.
    store.put("minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "X"}))
    second, started, checks = run_all(job, instance)
    assert not second.success
    evaluation = checks["accepted_values_country"]
    assert not evaluation.passed
    assert evaluation.metadata["failing_rows"].value == 1
    assert evaluation.metadata["total_rows"].value == 2
    assert evaluation.severity == dg.AssetCheckSeverity.ERROR
    # Bronze took the new object; silver was checked and not published; gold never started.
    assert lake.current("bronze.orders").rows == 2
    assert lake.current("silver.orders_clean") == published
    assert read_table("silver.orders_clean", lake_root=lake.root)["order_id"].tolist() == [1]
    assert "silver__orders_clean" in started and "gold__revenue" not in started
    (failure,) = [e for e in second.all_events if e.event_type_value == "STEP_FAILURE"]
    message = failure.event_specific_data.error.message
    assert "accepted_values_country" in message and "'X'" in message
    assert f"version {published.version_id} stays current" in message
    # The asset's page shows the version that stays current, beside the failed step.
    (kept,) = [
        e.event_specific_data.asset_observation
        for e in second.all_events
        if e.event_type_value == "ASSET_OBSERVATION"
    ]
    assert kept.asset_key == dg.AssetKey(["silver", "orders_clean"])
    assert kept.metadata["lake_version"].value == published.version_id
    assert kept.metadata["failed_checks"].value == ["accepted_values_country"]
    assert f"version {published.version_id} stays current" in (kept.description or "")
    # Not retried: the same data would fail the same check.
    assert not [e for e in second.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]

    # `medallion impact` names the failed check, the version that stays current, and what
    # downstream was protected from the rejected output.
    from click.testing import CliRunner

    from medallion_assets.cli import cli

    impact = CliRunner().invoke(cli, ["impact", "silver.orders_clean", "--project", str(root)])
    assert impact.exit_code == 0, impact.output
    text = impact.output
    assert "BLOCKED: the newest output of silver.orders_clean failed blocking checks" in text
    assert "accepted_values_country (accepted_values): 1 of 2 rows" in text and "'X'" in text
    assert f"stays current: version {published.version_id} (1 rows" in text
    assert "protected: none of the 1 downstream table(s) and exposure(s)" in text
    assert "gold.revenue" in text.split("protected:")[1]
    as_json = CliRunner().invoke(
        cli, ["impact", "silver.orders_clean", "--format", "json", "--project", str(root)]
    )
    (blocked,) = json.loads(as_json.output)["blocked"]
    assert blocked["current_version"] == published.version_id
    assert [c["name"] for c in blocked["failed_checks"]] == ["accepted_values_country"]
    Lake.local(root / ".medallion" / "lake").attach(spark)
    kept = spark.sql(f"SELECT order_id FROM {blocked['staging']}").collect()  # still readable
    assert sorted(r[0] for r in kept) == [1, 2]
