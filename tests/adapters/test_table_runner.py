"""The table-run seam through real Dagster runs on Spark: the runner passed to
``build_definitions`` is what executes every table, and a failed step is retried by one
mechanism only, at the delays the policy gives."""

from __future__ import annotations

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import build_definitions
from medallion_assets.adapters.translator import table_key
from medallion_assets.catalog.operations import RetryPolicy
from medallion_assets.control.store import ControlStore
from medallion_assets.healing.diagnosis import retry_delay
from medallion_assets.runtime.table_build import BuildOutcome
from medallion_assets.runtime.table_run import TableRun
from medallion_assets.runtime.table_runner import TableOutcome, TableRunner
from tests.adapters.minimal import minimal_job

pytestmark = pytest.mark.slow

POLICIES = """
retry_policies:
  quick: {max_retries: 2, delay_seconds: 0.2, backoff: exponential}
default_retry_policy: quick
"""
TABLES = ["bronze.orders", "silver.orders_clean", "gold.revenue"]


class Recording(TableRunner):
    """Runs each table as the base runner does, noting each run and marking its outcome."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str | None, str]] = []

    def run(self, table_run: TableRun) -> TableOutcome:
        self.runs.append((table_run.dataset.name, table_run.partition, table_run.run_id))
        outcome = super().run(table_run)
        return outcome.with_metadata(runner="recording")


class FlakySilver(TableRunner):
    """Fails every build of the silver table the way a lost executor would."""

    def build(self, table_run: TableRun) -> BuildOutcome:
        if table_run.dataset.name == "silver.orders_clean":
            raise ConnectionError("executor lost: connection reset by peer")
        return super().build(table_run)


def materializations(result: dg.ExecuteInProcessResult) -> dict[str, dict]:
    """Each materialized asset's metadata, by its key as ``layer/table``."""
    found = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        found["/".join(materialization.asset_key.path)] = materialization.metadata
    return found


def test_a_runner_subclass_passed_to_build_definitions_executes_every_table(
    spark, tmp_path, monkeypatch
):
    catalog, _job, lake, _plane = minimal_job(tmp_path, monkeypatch, POLICIES)
    runner = Recording()
    defs = build_definitions(catalog.root, runner=runner)
    job = defs.resolve_implicit_global_asset_job_def()
    opened: list[str] = []
    open_store = ControlStore.open.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        ControlStore,
        "open",
        classmethod(lambda cls, url, *a: opened.append(url) or open_store(cls, url, *a)),
    )

    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral())

    assert result.success
    # The run opens (and checks the schema of) the control store once, for all its steps.
    assert len(opened) == 1, opened
    assert [name for name, _, _ in runner.runs] == TABLES  # in dependency order
    assert {run_id for _, _, run_id in runner.runs} == {result.run_id}
    metadata = materializations(result)
    assert sorted(metadata) == ["bronze/orders", "gold/revenue", "silver/orders_clean"]
    assert all(m["runner"].value == "recording" for m in metadata.values())
    # What the base runner did is still done: published, loaded into the warehouse.
    assert lake.current("gold.revenue") is not None
    assert metadata["gold/revenue"]["warehouse_loaded"].value == "loaded"
    # The UI's columns are the published table's, typed, not the SQL's guesses.
    schema = metadata["bronze/orders"]["dagster/column_schema"].value
    types = {c.name: c.type for c in schema.columns}
    assert types["order_id"] == "long" and types["amount"] == "decimal(18, 2)", types
    assert all(types.values()), types


def test_a_failed_step_is_retried_by_its_policy_alone_at_the_policys_delays(
    spark, tmp_path, monkeypatch
):
    catalog, _job, lake, plane = minimal_job(tmp_path, monkeypatch, POLICIES)
    job = build_definitions(
        catalog.root, runner=FlakySilver()
    ).resolve_implicit_global_asset_job_def()

    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)

    assert not result.success
    policy = RetryPolicy(max_retries=2, delay_seconds=0.2, backoff="exponential")
    retries = [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    # Exactly the policy's retries, each after exactly its backoff (no jitter): 0.2 s, 0.4 s.
    waits = [e.event_specific_data.seconds_to_wait for e in retries]
    assert waits == [retry_delay(policy, 1), retry_delay(policy, 2)] == [0.2, 0.4]
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key == "silver__orders_clean"
    description = failure.event_specific_data.user_failure_data.description
    assert description.startswith("silver.orders_clean: failed after 3 attempt(s), UNCLASSIFIED")
    log = plane.store().audit(entities=["dataset:silver.orders_clean"])
    assert [e.details["attempt"] for e in log if e.kind == "attempt"] == [1, 2, 3]
    assert [e.message for e in log if e.kind == "retry"] == [
        "silver.orders_clean: retrying in 0.2 s (retry 1 of 2)",
        "silver.orders_clean: retrying in 0.4 s (retry 2 of 2)",
    ]
    assert lake.current("silver.orders_clean") is None and lake.current("bronze.orders")
    assert table_key("gold.revenue") not in {
        e.asset_key for e in result.get_asset_materialization_events()
    }
