"""The kill switch inside real Dagster runs on Spark: a flag flipped while a run executes stops
it at the next table boundary, the switched-off tables keep their previous version, nothing is
failed, and the audit log has the flip and the skip."""

from __future__ import annotations

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.resources import ControlResource
from medallion_assets.adapters.translator import DatasetTranslator
from medallion_assets.catalog import load_catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.lake import Lake
from medallion_assets.testing import read_table
from tests.adapters.minimal import minimal_project, orders

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path, monkeypatch):
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
    )
    home = root / ".medallion"
    catalog = load_catalog(root, use_cache=False)
    job = definitions_for(catalog, DatasetTranslator(catalog)).resolve_job_def("daily")
    return (
        root,
        store,
        job,
        Lake.local(home / "lake"),
        ControlPlane.from_env({"MEDALLION_HOME": str(home)}, root),
    )


def steps(result, kind: str) -> set[str]:
    return {e.step_key for e in result.all_events if e.event_type_value == kind}


def flip_when_bronze_publishes(monkeypatch, plane, scope: str, name: str, reason: str) -> None:
    """An operator switches ``scope:name`` off the moment bronze.orders publishes, through
    the real control store."""
    publish = Lake.publish

    def publish_then_flip(self, spark, staged, *args, **kwargs):
        version = publish(self, spark, staged, *args, **kwargs)
        if version.table == "bronze.orders":
            plane.store().set_flag(scope, name, False, reason, "oncall")
        return version

    monkeypatch.setattr(Lake, "publish", publish_then_flip)


def test_each_step_reads_the_control_flags_once(spark, project, monkeypatch):
    """The kill switch and the route around what is down decide on one reading of
    control.yaml and the store per step (they read it once each before)."""
    import medallion_assets.control_plane as control_plane
    import medallion_assets.recovery.recover as recover

    _root, _store, job, _lake, _plane = project
    read = control_plane.read_control_file
    reads: list[str] = []

    def counted(root):  # type: ignore[no-untyped-def]
        reads.append(str(root))
        return read(root)

    monkeypatch.setattr(control_plane, "read_control_file", counted)
    monkeypatch.setattr(recover, "read_control_file", counted)
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral())
    assert result.success
    assert len(steps(result, "STEP_SUCCESS")) == 3
    assert len(reads) == 3


def test_a_flag_flipped_mid_run_stops_the_run_at_the_next_table(spark, project, monkeypatch):
    _root, store, job, lake, plane = project
    instance = dg.DagsterInstance.ephemeral()
    assert job.execute_in_process(instance=instance).success
    before = {t: lake.current(t) for t in ("silver.orders_clean", "gold.revenue")}

    # New data arrives; while the run ingests it, an operator disables silver.orders_clean
    # (the flip happens the moment bronze publishes, through the real control store).
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "fr"})
    )
    flip_when_bronze_publishes(monkeypatch, plane, "dataset", "silver.orders_clean", "bad rows")
    second = job.execute_in_process(instance=instance, raise_on_error=False)

    assert second.success  # stopped, not failed
    assert lake.current("bronze.orders").rows == 2  # the table before the boundary finished
    materialized = {e.asset_key.path[-1] for e in second.get_asset_materialization_events()}
    assert materialized == {"orders"}
    assert "gold__revenue" in steps(second, "STEP_SKIPPED")  # never started
    assert "gold__revenue" not in steps(second, "STEP_START")
    for table, version in before.items():  # the switched-off tables keep their version
        assert lake.current(table) == version
    assert read_table("silver.orders_clean", lake_root=lake.root)["order_id"].tolist() == [1]
    warnings = [
        e.user_message
        for e in instance.all_logs(second.run_id)
        if "skipped: silver.orders_clean" in e.user_message
    ]
    assert (
        warnings
        and "disabled by dataset:silver.orders_clean (control store by oncall" in warnings[0]
    )

    log = [
        e
        for e in plane.store().audit(entities=["dataset:silver.orders_clean"])
        if e.kind in ("flag", "skip")
    ]
    assert [(e.kind, e.run_id) for e in log] == [("flag", ""), ("skip", second.run_id)]
    assert "bad rows" in log[0].message and log[1].details == {
        "flag": "dataset:silver.orders_clean"
    }


def test_a_disabled_pipeline_or_layer_skips_its_tables_from_the_run_start(spark, project):
    root, _store, job, lake, plane = project
    instance = dg.DagsterInstance.ephemeral()
    plane.store().set_flag("pipeline", "daily", False, "freeze", "oncall")
    frozen = job.execute_in_process(instance=instance)
    assert frozen.success and not frozen.get_asset_materialization_events()
    assert lake.current("bronze.orders") is None

    plane.store().set_flag("pipeline", "daily", True, "thaw", "oncall")
    control = root / "metadata" / "control.yaml"  # an edit, read at the next decision
    control.write_text("flags:\n  - {scope: layer, name: gold, enabled: false, reason: close}\n")
    partial = job.execute_in_process(instance=instance)
    built = {".".join(e.asset_key.path) for e in partial.get_asset_materialization_events()}
    assert built == {"bronze.orders", "silver.orders_clean"}
    assert lake.current("gold.revenue") is None


def test_the_control_job_flips_a_flag_from_the_ui_with_an_audit_entry(project):
    root, _store, _job, _lake, plane = project
    catalog = load_catalog(root, use_cache=False)
    defs = definitions_for(catalog, DatasetTranslator(catalog))
    control_job = defs.resolve_job_def("medallion_control")
    config = {"entity": "source:orders", "enabled": False, "reason": "SlowDown", "changed_by": "ui"}
    result = control_job.execute_in_process(
        run_config={"ops": {"set_control_flag": {"config": config}}},
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success
    assert [(f.entity, f.enabled, f.changed_by) for f in plane.store().flags()] == [
        ("source:orders", False, "ui")
    ]
    assert set(plane.disabled(catalog)) == {"bronze.orders"}
    (entry,) = plane.store().audit()
    assert entry.kind == "flag" and "disabled by ui: SlowDown" in entry.message

    typo = control_job.execute_in_process(
        run_config={"ops": {"set_control_flag": {"config": {**config, "entity": "source:order"}}}},
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not typo.success
    (failure,) = [e for e in typo.all_events if e.event_type_value == "STEP_FAILURE"]
    assert "did you mean orders" in failure.event_specific_data.error.message


def test_schedules_and_source_sensors_do_not_request_switched_off_tables(project):
    from datetime import UTC, datetime

    from medallion_assets.adapters.resources import LakeResource, S3Resource

    root, _store, _job, _lake, plane = project
    catalog = load_catalog(root, use_cache=False)
    defs = definitions_for(catalog, DatasetTranslator(catalog))
    schedule = next(s for s in defs.schedules if s.name == "daily_schedule")
    sensor = next(s for s in defs.sensors if s.name == "new_objects__orders")
    resources = {
        "control": ControlResource(project_root=str(root)),
        "lake": LakeResource(project_root=str(root)),
        "s3": S3Resource(project_root=str(root), throttles={}),
    }

    def tick():
        context = dg.build_schedule_context(
            scheduled_execution_time=datetime(2026, 11, 21, 3, tzinfo=UTC), resources=resources
        )
        return list(schedule.evaluate_tick(context).run_requests or []), schedule.evaluate_tick(
            context
        ).skip_message

    def sense():
        return sensor.evaluate_tick(dg.build_sensor_context(resources=resources, definitions=defs))

    (request,), _ = tick()
    assert {".".join(k.path) for k in request.asset_selection} == {
        "bronze.orders",
        "silver.orders_clean",
        "gold.revenue",
    }
    assert request.tags["pipeline"] == "daily"
    assert len(sense().run_requests) == 1  # orders/a.jsonl is not ingested yet

    plane.store().set_flag("dataset", "gold.revenue", False, "bad FX", "oncall")
    (request,), _ = tick()
    assert {".".join(k.path) for k in request.asset_selection} == {
        "bronze.orders",
        "silver.orders_clean",
    }
    plane.store().set_flag("source", "orders", False, "SlowDown", "oncall")
    skipped = sense()
    assert not skipped.run_requests and "disabled by source:orders" in skipped.skip_message
    plane.store().set_flag("pipeline", "daily", False, "freeze", "oncall")
    requests, skip = tick()
    assert requests == [] and "every table of daily is switched off" in skip


def test_medallion_run_lists_what_the_kill_switch_skipped(spark, project):
    from click.testing import CliRunner

    from medallion_assets.cli import cli

    root, _store, _job, lake, plane = project
    plane.store().set_flag("dataset", "silver.orders_clean", False, "bad rows", "oncall")
    result = CliRunner().invoke(cli, ["run", "--project", str(root)])
    assert result.exit_code == 0, result.output
    assert (
        "DISABLED: the kill switch or the profile's skip_below skipped these tables"
        in result.output
    )
    assert "silver.orders_clean: silver.orders_clean is disabled by dataset:" in result.output
    assert (
        "NOT RUN: an upstream table did not publish (blocked, failed or switched off): "
        "gold.revenue" in result.output
    )
    assert lake.current("bronze.orders") is not None and lake.current("gold.revenue") is None


def test_run_outcomes_are_recorded_in_the_audit_log(project):
    root, _store, _job, _lake, plane = project
    catalog = load_catalog(root, use_cache=False)
    defs = definitions_for(catalog, DatasetTranslator(catalog))
    instance = dg.DagsterInstance.ephemeral()
    bad = {"entity": "source:nope", "enabled": False, "reason": "x"}
    failed = defs.resolve_job_def("medallion_control").execute_in_process(
        run_config={"ops": {"set_control_flag": {"config": bad}}},
        instance=instance,
        raise_on_error=False,
    )
    sensor = next(s for s in defs.sensors if s.name == "audit_run_failed")
    context = dg.build_run_status_sensor_context(
        sensor_name=sensor.name,
        dagster_instance=instance,
        dagster_run=failed.dagster_run,
        dagster_event=failed.get_run_failure_event(),
        resources={"control": ControlResource(project_root=str(root))},
    )
    sensor(context)
    (entry,) = plane.store().audit(run_id=failed.run_id)
    assert (entry.kind, entry.entity) == ("run", "run")
    assert entry.message == "run of medallion_control failed; failed steps: set_control_flag"
    assert entry.details["job"] == "medallion_control"


def test_a_pipeline_switched_off_mid_run_stops_its_tables_in_medallion_run(
    spark, project, monkeypatch
):
    """`medallion run` is no one pipeline's run: switching a pipeline off while it executes
    stops the tables only that pipeline builds, at their table boundary; a table another,
    enabled pipeline also builds still runs."""
    from click.testing import CliRunner

    from medallion_assets.cli import cli

    root, _store, _job, lake, plane = project
    pipelines = root / "metadata" / "pipelines.yaml"
    pipelines.write_text(
        pipelines.read_text()
        + '  - id: hourly\n    schedule: "5 * * * *"\n    select: {layers: [bronze]}\n'
    )
    flip_when_bronze_publishes(monkeypatch, plane, "pipeline", "daily", "freeze")
    result = CliRunner().invoke(cli, ["run", "--project", str(root), "--max-workers", "1"])
    assert result.exit_code == 0, result.output
    assert lake.current("bronze.orders") is not None  # the hourly pipeline's too
    assert lake.current("silver.orders_clean") is None and lake.current("gold.revenue") is None
    assert "silver.orders_clean is disabled by pipeline:daily (control store by oncall" in (
        result.output
    )
