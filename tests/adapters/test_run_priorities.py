"""Run priorities on the project's own requests and the ``run_priorities`` sensor, evaluated on
a real (temporary, SQLite) Dagster instance and the project's SQLite control store, without a
daemon: schedules and source sensors tag each request with the profile in force at the tick;
the sensor tags queued runs that came without one, pre-empts a low-priority run holding a
system a queued focus run needs (audited), waits until that run has its slot, then re-queues
the unfinished tables of the pre-empted one, which the same run never pre-empts again; a focus
run in progress pre-empts too, and holds lower runs queued for its systems until it ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pytest
import yaml

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.preemption import PRIORITY_SENSOR
from medallion_assets.adapters.relaunch import ORIGIN_TAG, PREEMPTED_BY_TAG
from medallion_assets.adapters.resources import ControlResource, LakeResource, S3Resource
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import load_catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.profiles.overrides import ProfileOverrides
from medallion_assets.profiles.priority import HOLD_TAG, PRIORITY_TAG, PROFILE_TAG
from tests.adapters.queue_project import queue_project


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = queue_project(tmp_path, monkeypatch)
    catalog = load_catalog(root, use_cache=False)
    defs = definitions_for(catalog, DatasetTranslator(catalog))
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    resources = {
        "control": ControlResource(project_root=str(root)),
        "lake": LakeResource(project_root=str(root)),
        "s3": S3Resource(project_root=str(root), throttles={}),
    }
    return defs, plane, resources


def tick(defs, resources, schedule: str) -> dict[str, str]:
    definition = next(s for s in defs.schedules if s.name == schedule)
    context = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 21, 3, tzinfo=UTC), resources=resources
    )
    (request,) = definition.evaluate_tick(context).run_requests or []
    return {k: v for k, v in request.tags.items() if k in (PRIORITY_TAG, PROFILE_TAG)}


def test_each_tick_tags_its_request_with_the_profile_in_force_then(project):
    defs, plane, resources = project
    assert tick(defs, resources, "finance_schedule") == {PRIORITY_TAG: "3", PROFILE_TAG: "balanced"}
    assert tick(defs, resources, "reports_schedule") == {PRIORITY_TAG: "0", PROFILE_TAG: "balanced"}

    # The same definitions (no reload): the override reaches the next tick.
    ProfileOverrides(plane.store()).set("finance", "focus", "month-end close", "oncall")
    assert tick(defs, resources, "finance_schedule") == {PRIORITY_TAG: "10", PROFILE_TAG: "focus"}
    ProfileOverrides(plane.store()).set("finance", "default", "close done", "oncall")
    assert tick(defs, resources, "finance_schedule") == {PRIORITY_TAG: "3", PROFILE_TAG: "balanced"}


def test_a_source_sensors_request_carries_the_priority_of_its_table(project):
    defs, plane, resources = project
    sensor = next(s for s in defs.sensors if s.name == "new_objects__orders")
    ProfileOverrides(plane.store()).set("all", "focus", "incident", "oncall")
    context = dg.build_sensor_context(resources=resources, definitions=defs)
    (request,) = sensor.evaluate_tick(context).run_requests or []
    assert request.tags[PRIORITY_TAG] == "1" and request.tags[PROFILE_TAG] == "focus"


def run_of(defs, instance, job: str, status=None, tags=None) -> dg.DagsterRun:
    """A run of ``job`` in ``status``, put there by the events Dagster records (a queued run
    made directly would need a code location's origin)."""
    from dagster._core.remote_origin import (
        InProcessCodeLocationOrigin,
        RemoteJobOrigin,
        RemoteRepositoryOrigin,
    )
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    location = InProcessCodeLocationOrigin(
        LoadableTargetOrigin(module_name="medallion_assets.definitions")
    )
    definition = defs.resolve_job_def(job)
    run = instance.create_run_for_job(
        job_def=definition,
        tags={**definition.tags, **(tags or {})},
        remote_job_origin=RemoteJobOrigin(RemoteRepositoryOrigin(location, "__repository__"), job),
    )
    if status is None:
        return run
    kind = {
        dg.DagsterRunStatus.QUEUED: dg.DagsterEventType.RUN_ENQUEUED,
        dg.DagsterRunStatus.STARTING: dg.DagsterEventType.RUN_STARTING,
        dg.DagsterRunStatus.STARTED: dg.DagsterEventType.RUN_START,
    }[status]
    instance.report_dagster_event(dg.DagsterEvent(kind.value, job_name=job), run.run_id)
    return instance.get_run_by_id(run.run_id)


def evaluate(defs, resources, instance, cursor=None):
    sensor = next(s for s in defs.sensors if s.name == PRIORITY_SENSOR)
    context = dg.build_sensor_context(
        instance=instance, resources=resources, definitions=defs, cursor=cursor
    )
    return sensor.evaluate_tick(context)


def start(instance, run: dg.DagsterRun) -> None:
    event = dg.DagsterEvent(dg.DagsterEventType.RUN_START.value, job_name=run.job_name)
    instance.report_dagster_event(event, run.run_id)


@pytest.mark.slow
def test_the_sensor_tags_pre_empts_and_re_queues(project, tmp_path):
    defs, plane, resources = project
    ProfileOverrides(plane.store()).set("finance", "focus", "month-end close", "oncall")
    with dg.instance_for_test() as instance:
        low = run_of(defs, instance, "reports", dg.DagsterRunStatus.STARTED)
        # launched from the UI: no priority tags; the sensor gives them as a request would get
        critical = run_of(defs, instance, "finance", dg.DagsterRunStatus.QUEUED)
        result = evaluate(defs, resources, instance)
        assert not result.run_requests
        tagged = instance.get_run_by_id(critical.run_id).tags
        assert (tagged[PRIORITY_TAG], tagged[PROFILE_TAG]) == ("10", "focus")

        # the low run (priority 0) holds spark, which the queued focus run needs
        assert instance.get_run_by_id(low.run_id).status == dg.DagsterRunStatus.CANCELING
        (entry,) = [e for e in plane.store().audit(run_id=low.run_id) if e.kind == "preempt"]
        assert f"run {critical.run_id} (priority 10, profile focus) needs spark" in entry.message
        assert entry.details["by"] == critical.run_id and entry.details["priority"] == 0

        instance.report_run_canceled(instance.get_run_by_id(low.run_id))
        waiting = evaluate(defs, resources, instance, result.cursor)
        assert not waiting.run_requests  # the focus run has not got its slot yet
        start(instance, critical)
        requeued = evaluate(defs, resources, instance, waiting.cursor)
        (request,) = requeued.run_requests
        assert request.job_name == "reports"
        assert set(request.asset_selection) == {
            table_key("silver.orders_clean"),
            table_key("gold.order_count"),
        }
        assert request.tags[PREEMPTED_BY_TAG] == critical.run_id
        assert request.tags[ORIGIN_TAG] == low.run_id
        assert request.tags[PRIORITY_TAG] == "0"
        assert request.tags[HOLD_TAG] == "yes"  # queued held: the focus run is still running
        relaunched = [e for e in plane.store().audit(run_id=low.run_id) if e.kind == "relaunch"]
        assert f"re-queued after pre-emption by run {critical.run_id}" in relaunched[0].message

        # the re-queued run, running again, is not pre-empted by the same run a second time
        again = run_of(defs, instance, "reports", dg.DagsterRunStatus.STARTED, request.tags)
        still_queued = run_of(
            defs, instance, "finance", dg.DagsterRunStatus.QUEUED, {PRIORITY_TAG: "10"}
        )
        instance.delete_run(critical.run_id)
        instance.add_run_tags(still_queued.run_id, {PROFILE_TAG: "focus"})
        # a different focus run still may: the rule is per pre-empting run, not forever
        evaluate(defs, resources, instance, requeued.cursor)
        assert instance.get_run_by_id(again.run_id).status == dg.DagsterRunStatus.CANCELING


def test_an_equal_priority_run_is_never_pre_empted(project, tmp_path):
    defs, plane, resources = project
    ProfileOverrides(plane.store()).set("all", "focus", "incident", "oncall")
    with dg.instance_for_test() as instance:
        running = run_of(defs, instance, "finance", dg.DagsterRunStatus.STARTED)
        run_of(defs, instance, "finance", dg.DagsterRunStatus.QUEUED)
        evaluate(defs, resources, instance)
        assert instance.get_run_by_id(running.run_id).status == dg.DagsterRunStatus.STARTED
        assert not [e for e in plane.store().audit() if e.kind == "preempt"]


def test_the_project_instance_tags_a_run_launched_without_a_priority_as_it_queues_it(project):
    from dagster._core.run_coordinator import SubmitRunContext

    from medallion_assets.adapters.instance import project_instance

    defs, plane, _resources = project
    root = defs.resources["control"].project_root
    ProfileOverrides(plane.store()).set("finance", "focus", "month-end close", "oncall")
    profiles = load_catalog(root, use_cache=False).profiles
    with project_instance(root, {}, profiles) as instance:
        run = run_of(defs, instance, "finance")  # as the UI or a backfill creates it
        instance.run_coordinator.submit_run(SubmitRunContext(run, workspace=None))
        queued = instance.get_run_by_id(run.run_id)
        assert queued.status == dg.DagsterRunStatus.QUEUED
        assert (queued.tags[PRIORITY_TAG], queued.tags[PROFILE_TAG]) == ("10", "focus")

        # a run that has its priority keeps it
        tagged = run_of(defs, instance, "reports", tags={PRIORITY_TAG: "7", PROFILE_TAG: "x"})
        instance.run_coordinator.submit_run(SubmitRunContext(tagged, workspace=None))
        assert instance.get_run_by_id(tagged.run_id).tags[PRIORITY_TAG] == "7"


@pytest.mark.slow
def test_a_run_still_starting_is_pre_empted_only_once_it_has_started(project, tmp_path):
    """Terminated while its worker comes up, Dagster would end it FAILURE, not CANCELED."""
    defs, plane, resources = project
    ProfileOverrides(plane.store()).set("finance", "focus", "month-end close", "oncall")
    with dg.instance_for_test() as instance:
        low = run_of(defs, instance, "reports", dg.DagsterRunStatus.STARTING)
        run_of(defs, instance, "finance", dg.DagsterRunStatus.QUEUED)
        first = evaluate(defs, resources, instance)
        assert instance.get_run_by_id(low.run_id).status == dg.DagsterRunStatus.STARTING
        start(instance, low)
        evaluate(defs, resources, instance, first.cursor)
        assert instance.get_run_by_id(low.run_id).status == dg.DagsterRunStatus.CANCELING


@pytest.mark.slow
def test_a_focus_run_in_progress_pre_empts_and_holds_lower_runs_until_it_ends(project, tmp_path):
    """Focus claims the systems for the whole run, not only while it waits in the queue: a low
    run holding one is pre-empted, one queued for one is held (the project's queue never starts
    a run tagged medallion/held=yes), and released when the focus run ends."""
    defs, plane, resources = project
    ProfileOverrides(plane.store()).set("finance", "focus", "month-end close", "oncall")
    with dg.instance_for_test() as instance:
        critical = run_of(defs, instance, "finance", dg.DagsterRunStatus.STARTED)
        low = run_of(defs, instance, "reports", dg.DagsterRunStatus.STARTED)
        waiting = run_of(defs, instance, "reports", dg.DagsterRunStatus.QUEUED)
        first = evaluate(defs, resources, instance)
        assert instance.get_run_by_id(low.run_id).status == dg.DagsterRunStatus.CANCELING
        assert instance.get_run_by_id(waiting.run_id).tags[HOLD_TAG] == "yes"
        (held,) = [e for e in plane.store().audit(run_id=waiting.run_id) if e.kind == "hold"]
        assert f"held while run {critical.run_id} (priority 10, profile focus) runs" in held.message
        assert held.details == {"by": critical.run_id, "pools": ["spark"]}

        again = evaluate(defs, resources, instance, first.cursor)  # nothing changed: said once
        assert len([e for e in plane.store().audit() if e.kind == "hold"]) == 1
        done = dg.DagsterEvent(dg.DagsterEventType.RUN_SUCCESS.value, job_name="finance")
        instance.report_dagster_event(done, critical.run_id)
        evaluate(defs, resources, instance, again.cursor)
        assert instance.get_run_by_id(waiting.run_id).tags[HOLD_TAG] == "no"
        assert [e.kind for e in plane.store().audit(run_id=waiting.run_id)] == ["hold", "release"]


def test_the_project_queue_never_starts_a_held_run(project):
    """Dagster's own counter, which the queue daemon asks before it starts a queued run."""
    from dagster._utils.tags import TagConcurrencyLimitsCounter

    from medallion_assets.adapters.instance import instance_settings

    defs, _plane, _resources = project
    profiles = load_catalog(defs.resources["control"].project_root, use_cache=False).profiles
    settings = yaml.safe_load(instance_settings(profiles).split("\n", 1)[1])
    limits = settings["run_coordinator"]["config"]["tag_concurrency_limits"]
    assert {"key": HOLD_TAG, "value": "yes", "limit": 0} in limits
    counter = TagConcurrencyLimitsCounter(limits, [])
    held = dg.DagsterRun(job_name="x", tags={HOLD_TAG: "yes"})
    assert counter.is_blocked(held)
    assert not counter.is_blocked(dg.DagsterRun(job_name="x", tags={HOLD_TAG: "no"}))


def test_queueing_a_focus_run_holds_the_lower_runs_already_queued_at_once(project):
    """The project's coordinator applies the holds as it queues a run: a lower run queued before
    the focus run cannot start in the seconds before the sensor's next tick."""
    from dagster._core.run_coordinator import SubmitRunContext

    from medallion_assets.adapters.instance import project_instance

    defs, plane, _resources = project
    root = defs.resources["control"].project_root
    ProfileOverrides(plane.store()).set("finance", "focus", "month-end close", "oncall")
    profiles = load_catalog(root, use_cache=False).profiles
    with project_instance(root, {}, profiles) as instance:
        low = run_of(defs, instance, "reports")
        instance.run_coordinator.submit_run(SubmitRunContext(low, workspace=None))
        assert HOLD_TAG not in instance.get_run_by_id(low.run_id).tags  # nothing claims yet
        critical = run_of(defs, instance, "finance")
        instance.run_coordinator.submit_run(SubmitRunContext(critical, workspace=None))
        assert instance.get_run_by_id(low.run_id).tags[HOLD_TAG] == "yes"
        assert HOLD_TAG not in instance.get_run_by_id(critical.run_id).tags
        (held,) = [e for e in plane.store().audit(run_id=low.run_id) if e.kind == "hold"]
        assert f"held while run {critical.run_id} (priority 10, profile focus) waits" in (
            held.message
        )


@contextmanager
def focus_queued_over_a_lower_run(project) -> Iterator[tuple[dg.DagsterInstance, Any, Any]]:
    """The project's instance, a lower run started, and a focus run (finance under the focus
    profile) just submitted through the project's run coordinator: (instance, low, critical)."""
    from dagster._core.run_coordinator import SubmitRunContext

    from medallion_assets.adapters.instance import project_instance

    defs, plane, _resources = project
    root = defs.resources["control"].project_root
    ProfileOverrides(plane.store()).set("finance", "focus", "month-end close", "oncall")
    profiles = load_catalog(root, use_cache=False).profiles
    with project_instance(root, {}, profiles) as instance:
        low = run_of(defs, instance, "reports", dg.DagsterRunStatus.STARTED)
        critical = run_of(defs, instance, "finance")
        instance.run_coordinator.submit_run(SubmitRunContext(critical, workspace=None))
        yield instance, low, critical


def test_queueing_a_focus_run_pre_empts_a_running_lower_run_at_once_and_the_sensor_requeues_it(
    project,
):
    """The coordinator pre-empts as it queues the focus run, not at the sensor's next tick; the
    run it terminated waits on its tags (not in the sensor's cursor) and the sensor re-queues
    it once it is canceled and the focus run has its slot."""
    from medallion_assets.adapters.preemption import PREEMPTED_FOR_TAG, PREEMPTED_TAG

    defs, plane, resources = project
    with focus_queued_over_a_lower_run(project) as (instance, low, critical):
        victim = instance.get_run_by_id(low.run_id)
        assert victim.status == dg.DagsterRunStatus.CANCELING
        assert victim.tags[PREEMPTED_TAG] == "pending"
        assert victim.tags[PREEMPTED_FOR_TAG] == critical.run_id
        (entry,) = [e for e in plane.store().audit(run_id=low.run_id) if e.kind == "preempt"]
        assert f"run {critical.run_id} (priority 10, profile focus) needs spark" in entry.message

        instance.report_run_canceled(victim)
        assert not evaluate(defs, resources, instance).run_requests  # the focus run waits
        start(instance, critical)
        (request,) = evaluate(defs, resources, instance).run_requests  # no cursor: its tags
        assert request.tags[ORIGIN_TAG] == low.run_id
        assert instance.get_run_by_id(low.run_id).tags[PREEMPTED_TAG] == "requeued"
        assert not evaluate(defs, resources, instance).run_requests  # once


def test_a_run_being_pre_empted_is_pre_empted_once_though_it_still_shows_started(project):
    """Terminating takes a while: a run worker may report its start after the coordinator
    asked it to stop. The sensor's next tick must not terminate and audit it a second time."""
    defs, plane, resources = project
    with focus_queued_over_a_lower_run(project) as (instance, low, _critical):
        start(instance, instance.get_run_by_id(low.run_id))  # its start, reported late
        assert instance.get_run_by_id(low.run_id).status == dg.DagsterRunStatus.STARTED
        evaluate(defs, resources, instance)
        preempts = [e for e in plane.store().audit(run_id=low.run_id) if e.kind == "preempt"]
        assert len(preempts) == 1
