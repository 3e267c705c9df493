"""Bad raw objects through real Dagster runs on Spark: they are set aside and named, never
evolve the schema even with the evolve_schema healing rule in force, and do not poison later
runs once the bad file is gone and a good one has arrived."""

from __future__ import annotations

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import load_catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.lake import Lake
from medallion_assets.runtime.ingest.schema_drift import read_evolved
from tests.adapters.minimal import minimal_project, orders

pytestmark = pytest.mark.slow

POLICIES = """
retry_policies:
  quick: {max_retries: 2, delay_seconds: 0.1, backoff: fixed}
default_retry_policy: quick
healing_rules:
  - name: schema_mismatch
    match: {message: "(?i)schema mismatch"}
    error_code: SCHEMA_MISMATCH
    actions: [evolve_schema]
    then: retry
  - name: corrupt_object
    match: {exception: CorruptObject}
    error_code: CORRUPT_OBJECT
    then: fail
"""

FIRST = {"order_id": 1, "amount": 5, "country": "de"}


@pytest.fixture
def project(tmp_path, monkeypatch):
    root, store = minimal_project(tmp_path, monkeypatch, FIRST)
    (root / "metadata" / "policies.yaml").write_text(POLICIES)
    catalog = load_catalog(root, use_cache=False)
    job = definitions_for(
        catalog, DatasetTranslator(catalog)
    ).resolve_implicit_global_asset_job_def()
    return job, store, Lake.local(root / ".medallion" / "lake")


def evolved(lake: Lake) -> list:
    """The evolved columns of orders in the project's control store (beside the lake)."""
    home = lake.root.parent
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(home)}, home.parent)
    return read_evolved(plane.state(), "orders")


def bronze_metadata(result) -> dict:
    (event,) = [
        e
        for e in result.get_asset_materialization_events()
        if e.asset_key == table_key("bronze.orders")
    ]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def step_events(result, kind: str) -> list:
    return [e for e in result.all_events if e.event_type_value == kind]


def test_bad_objects_are_named_and_do_not_poison_later_runs(spark, project):
    job, store, lake = project
    instance = dg.DagsterInstance.ephemeral()
    assert job.execute_in_process(instance=instance).success

    utf16 = orders({"order_id": 2, "amount": 7, "country": "fr"}).decode().encode("utf-16")
    store.put("minimal-raw", "orders/b.jsonl", utf16)
    backtick = {"order_id": 3, "amount": 9, "country": "gb", "note`s": "x"}
    store.put("minimal-raw", "orders/c.jsonl", orders(backtick))
    second = job.execute_in_process(instance=instance)
    assert second.success
    assert not step_events(second, "STEP_UP_FOR_RETRY")  # not taken for drift: nothing to heal
    metadata = bronze_metadata(second)
    assert metadata["quarantined_objects"] == 2
    assert [o["key"] for o in metadata["quarantined_object_keys"]] == [
        "orders/b.jsonl",
        "orders/c.jsonl",
    ]
    assert evolved(lake) == []

    for key in ("b.jsonl", "c.jsonl"):
        store.root.joinpath("minimal-raw", "orders", key).unlink()
    store.put(
        "minimal-raw", "orders/d.jsonl", orders({"order_id": 4, "amount": 1, "country": "fr"})
    )
    third = job.execute_in_process(instance=instance)
    assert third.success
    assert lake.current("bronze.orders").rows == 2
    assert bronze_metadata(third)["new_objects"] == 1
    assert evolved(lake) == []


def test_a_run_with_nothing_readable_names_the_object_then_recovers(spark, project):
    job, store, lake = project
    store.put("minimal-raw", "orders/a.jsonl", b"\x00\x01 not json \xff\n")
    instance = dg.DagsterInstance.ephemeral()
    failed = job.execute_in_process(instance=instance, raise_on_error=False)
    assert not failed.success
    message = step_events(failed, "STEP_FAILURE")[0].event_specific_data.error.message
    assert not step_events(failed, "STEP_UP_FOR_RETRY")
    assert "CORRUPT_OBJECT is permanent" in message
    assert "s3://minimal-raw/orders/a.jsonl: it is not valid utf-8" in message
    assert lake.current("bronze.orders") is None
    assert evolved(lake) == []

    store.root.joinpath("minimal-raw", "orders", "a.jsonl").unlink()
    store.put("minimal-raw", "orders/b.jsonl", orders(FIRST))
    recovered = job.execute_in_process(instance=instance)
    assert recovered.success
    assert lake.current("gold.revenue") is not None
    assert bronze_metadata(recovered)["quarantined_objects"] == 0
