"""The run-failure sensor on real runs of a real instance, reported failed as Dagster's code
server reports a run whose process died: what it re-launches, its limit, a job without tables;
and how it tells a step that failed on its own from one whose run process was interrupted
(SIGTERM to the run worker), on Dagster's serialized errors as the event log keeps them."""

from __future__ import annotations

import sys

import dagster as dg
import pytest
from dagster._utils.error import serializable_error_info_from_exc_info

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.relaunch import (
    ATTEMPT_TAG,
    ORIGIN_TAG,
    RELAUNCH_SENSOR,
    was_interrupted,
)
from medallion_assets.adapters.resources import ControlResource, LakeResource
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import load_catalog
from medallion_assets.control_plane import ControlPlane
from tests.adapters.minimal import minimal_project


def serialized(make) -> object:
    try:
        make()
    except BaseException:
        return serializable_error_info_from_exc_info(sys.exc_info())
    raise AssertionError("nothing raised")


def test_an_interruption_converted_into_a_failure_is_still_an_interruption():
    def interrupted_step():
        try:
            raise dg.DagsterExecutionInterruptedError()
        except dg.DagsterExecutionInterruptedError as interruption:
            raise dg.Failure("silver.orders: interrupted", allow_retries=False) from interruption

    def failed_step():
        try:
            raise ValueError("UNRESOLVED_COLUMN country")
        except ValueError as error:
            raise dg.Failure("silver.orders: SQL_MISSING_COLUMN", allow_retries=False) from error

    assert was_interrupted(serialized(interrupted_step))
    assert not was_interrupted(serialized(failed_step))
    assert not was_interrupted(None)


@pytest.fixture
def minimal(tmp_path, monkeypatch):
    root, _store = minimal_project(tmp_path, monkeypatch, {"order_id": 1, "amount": 5})
    (root / "metadata" / "policies.yaml").write_text(
        "retry_policies:\n  standard: {max_retries: 2}\ndefault_retry_policy: standard\n"
        "healing_rules:\n  - name: lost\n    match: {exception: RunProcessLost}\n"
        "    error_code: RUN_PROCESS_LOST\n    actions: [clear_staging]\n    then: retry\n"
    )
    catalog = load_catalog(root, use_cache=False)
    defs = definitions_for(catalog, DatasetTranslator(catalog))
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    return root, defs, plane


def evaluate(defs, root, instance, run, event) -> list:
    sensor = next(s for s in defs.sensors if s.name == RELAUNCH_SENSOR)
    context = dg.build_run_status_sensor_context(
        sensor_name=sensor.name,
        dagster_instance=instance,
        dagster_run=run,
        dagster_event=event,
        resources={
            "control": ControlResource(project_root=str(root)),
            "lake": LakeResource(project_root=str(root)),
        },
    ).for_run_failure()
    result = sensor(context)
    return list(result) if result is not None else []


def lost_run(defs, instance, job: str, tags: dict[str, str] | None = None, config=None):
    """A run of ``job`` whose process died before any step finished, reported as the code
    server reports it (a run failure with no reason)."""
    definition = defs.resolve_job_def(job)
    run = instance.create_run_for_job(
        job_def=definition,
        tags={**definition.tags, **(tags or {})},  # as a launch merges them
        run_config=config or {},
    )
    return run, instance.report_run_failed(run)


def test_a_lost_run_relaunches_its_tables_until_their_limit(minimal):
    root, defs, plane = minimal
    instance = dg.DagsterInstance.ephemeral()
    run, event = lost_run(defs, instance, "daily")
    (request,) = evaluate(defs, root, instance, run, event)
    assert isinstance(request, dg.RunRequest) and request.job_name == "daily"
    assert set(request.asset_selection) == {
        table_key(t) for t in ("bronze.orders", "silver.orders_clean", "gold.revenue")
    }
    assert (request.tags[ORIGIN_TAG], request.tags[ATTEMPT_TAG]) == (run.run_id, "1")
    assert request.tags["pipeline"] == "daily"

    # The second relaunch of the chain has used the policy's 2 retries.
    tags = {ORIGIN_TAG: run.run_id, ATTEMPT_TAG: "2"}
    again, event = lost_run(defs, instance, "daily", tags)
    (skip,) = evaluate(defs, root, instance, again, event)
    assert isinstance(skip, dg.SkipReason) and "nothing to relaunch" in skip.skip_message
    left = [e.message for e in plane.store().audit(run_id=again.run_id) if e.kind == "outcome"]
    assert "gold.revenue: not relaunched: relaunch limit reached (2 retries)" in left


def test_a_lost_run_of_a_job_without_tables_relaunches_nothing(minimal):
    root, defs, plane = minimal
    instance = dg.DagsterInstance.ephemeral()
    flip = {"entity": "source:orders", "enabled": False, "reason": "x"}
    config = {"ops": {"set_control_flag": {"config": flip}}}
    run, event = lost_run(defs, instance, "medallion_control", config=config)
    (skip,) = evaluate(defs, root, instance, run, event)
    assert isinstance(skip, dg.SkipReason) and "nothing to relaunch" in skip.skip_message
    assert [e.kind for e in plane.store().audit(run_id=run.run_id)] == ["error", "outcome"]
