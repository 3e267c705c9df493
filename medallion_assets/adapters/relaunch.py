"""The run-failure sensor: heal and re-launch runs that failed outside their steps.

A step's own failures are classified, healed and retried inside the step
(``adapters.retry.heal_and_retry``). A run can also fail around its steps: the run process is killed
(the OOM killer, a lost node), the run worker disappears, or the run never initializes. Dagster
then marks the run failed (the code server reports a run process that died; run monitoring does
it for launchers that support health checks). This sensor sees that failure, classifies it by
the healing rules (the signature's exception type is ``RunProcessLost``, the message is what
Dagster recorded), runs the rule's actions for every unfinished table (``clear_staging`` removes
what the dead process staged), and re-launches only the tables the run did not finish, each up
to its retry policy's ``max_retries`` (``relaunch.relaunch``). Every decision is audited.

A relaunch carries ``medallion/relaunch_of`` (the first run of the chain) and
``medallion/relaunch`` (its number), so the limit holds across a chain of relaunches.
"""

from collections.abc import Iterator, Mapping  # no "from __future__": Dagster reads hints
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from medallion_assets.adapters.kill_switch import owns, run_tables
from medallion_assets.adapters.priority import priority_tags
from medallion_assets.adapters.resources import ControlResource, LakeResource
from medallion_assets.adapters.translator import DEFAULT_NAMES, Names
from medallion_assets.catalog import Catalog
from medallion_assets.control.store import ControlStore
from medallion_assets.control_plane import ControlPlane
from medallion_assets.healing.actions import HealingContext, run_actions
from medallion_assets.healing.diagnosis import Diagnosis, Failure, diagnose
from medallion_assets.healing.retry import max_retries, policy_of
from medallion_assets.relaunch.relaunch import failed_outside_steps, relaunch_plan
from medallion_assets.runtime.table_run import TableRun

RELAUNCH_SENSOR = "relaunch_failed_runs"
RELAUNCH_JOB = "medallion_relaunch"
ORIGIN_TAG = "medallion/relaunch_of"
ATTEMPT_TAG = "medallion/relaunch"
PREEMPTED_BY_TAG = (
    "medallion/preempted_by"  # the runs that pre-empted the chain (adapters.preemption)
)
LOST = "RunProcessLost"
_COPIED_TAGS = (
    "pipeline",
    PREEMPTED_BY_TAG,
    "dagster/asset_partition_range_start",
    "dagster/asset_partition_range_end",
)


def build_relaunch_sensor(
    catalog: Catalog, jobs: list[Any], names: Names = DEFAULT_NAMES
) -> dg.SensorDefinition:
    job_names = {job.name for job in jobs}

    # ``**_``: a direct call (a test's) passes the required resources as keywords too.
    def _relaunch(context: dg.RunStatusSensorContext, **_: Any) -> Iterator[Any]:
        run = context.dagster_run
        instance = context.instance
        if not owns(run, instance, names):
            yield dg.SkipReason(f"run {run.run_id} is another project's")
            return
        resources = names.resources_of(context)
        control: ControlResource = resources.control
        lake: LakeResource = resources.lake
        steps = step_outcomes(instance, run.run_id, names)
        reason = _failure_reason(context.dagster_event)
        if not failed_outside_steps(reason, steps["interrupted"]):
            yield dg.SkipReason(f"run {run.run_id} failed in a step: its step retries decided")
            return
        plane = control.plane()  # one per evaluation: the store is opened once
        store = plane.store()
        message = _failure_message(instance, run.run_id, context.dagster_event)
        failure = Failure((LOST, f"RunFailureReason.{reason}"), message)
        diagnosis = diagnose(catalog.healing_rules, failure)
        _planned, unfinished = _unfinished(catalog, run, instance, steps, names)
        attempt = int(run.tags.get(ATTEMPT_TAG, "0")) + 1
        origin = run.tags.get(ORIGIN_TAG, run.run_id)
        store.record(
            "error",
            "run",
            f"run of {run.job_name} failed outside its steps: {diagnosis.error_code} "
            f"({reason or 'no reason recorded'}): {message.splitlines()[0][:300]}",
            run_id=run.run_id,
            details={"rule": diagnosis.rule, "then": diagnosis.then, "unfinished": unfinished},
        )
        if diagnosis.permanent:
            store.record(
                "outcome",
                "run",
                f"not relaunched: {diagnosis.error_code} is permanent",
                run_id=run.run_id,
            )
            yield dg.SkipReason(f"{diagnosis.error_code} is permanent (rule {diagnosis.rule})")
            return
        _heal(catalog, diagnosis, failure, unfinished, run, lake, store, attempt)
        relaunch = Relaunch(run, steps, attempt, origin)
        request = relaunch_request(catalog, instance, plane, relaunch, job_names, names)
        if request is None:
            yield dg.SkipReason(f"run {run.run_id}: nothing to relaunch")
            return
        yield request

    # The class rather than ``run_failure_sensor``: the decorator takes resources only as
    # parameters named after their keys, and a project's keys carry its prefix.
    return dg.RunStatusSensorDefinition(
        name=names.name(RELAUNCH_SENSOR),
        run_status=dg.DagsterRunStatus.FAILURE,
        run_status_sensor_fn=_relaunch,
        monitor_all_code_locations=False,
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=10,
        request_jobs=jobs,
        description="Heals and re-launches the unfinished tables of runs that failed outside "
        "their steps (a killed run process, a lost run worker), up to their retry policy.",
        required_resource_keys={names.resource("control"), names.resource("lake")},
    )


@dataclass(frozen=True)
class Relaunch:
    """One run to re-launch the unfinished tables of: what its steps did, the relaunch number
    it would be (``attempt``, checked against each table's retry limit), the first run of its
    chain, and why (for the audit: empty for a failed run)."""

    run: dg.DagsterRun
    steps: dict[str, set[str]]  # step_outcomes
    attempt: int
    origin: str
    why: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)  # added to the request's


def relaunch_request(
    catalog: Catalog,
    instance: dg.DagsterInstance,
    plane: ControlPlane,
    relaunch: Relaunch,
    job_names: set[str],
    names: Names = DEFAULT_NAMES,
) -> dg.RunRequest | None:
    """The request re-launching what ``relaunch.run`` left unfinished (None: nothing to), its
    plan audited: what goes again, what is left out and why. Shared by the run-failure sensor
    and the pre-emption sensor's re-queue."""
    run, steps, store = relaunch.run, relaunch.steps, plane.store()
    planned, unfinished = _unfinished(catalog, run, instance, steps, names)
    pipeline = run.tags.get("pipeline")
    off = plane.disabled(catalog, unfinished, [pipeline] if pipeline else [])
    plan = relaunch_plan(
        catalog,
        planned,
        done=steps["done"],
        failed_in_step=steps["failed"],
        disabled={t: d.describe() for t, d in off.items()},
        attempt=relaunch.attempt,
        limits={t: _limit(catalog, t, pipeline) for t in unfinished},
    )
    for table, why in plan.left_out.items():
        store.record(
            "outcome", f"dataset:{table}", f"{table}: not relaunched: {why}", run_id=run.run_id
        )
    if not plan.tables:
        store.record("outcome", "run", "nothing to relaunch", run_id=run.run_id)
        return None
    job_name = run.job_name if run.job_name in job_names else names.name(RELAUNCH_JOB)
    tags = {k: v for k, v in run.tags.items() if k in _COPIED_TAGS}
    tags.update({ORIGIN_TAG: relaunch.origin, ATTEMPT_TAG: str(relaunch.attempt)})
    tags.update(priority_tags(catalog, plane, plan.tables, pipeline))
    tags.update(relaunch.tags)
    store.record(
        "relaunch",
        "run",
        f"relaunching {', '.join(plan.tables)} of run {run.run_id} as {job_name} "
        f"(relaunch {relaunch.attempt} of the chain from {relaunch.origin}){relaunch.why}",
        run_id=run.run_id,
        details={
            "tables": list(plan.tables),
            "attempt": relaunch.attempt,
            "origin": relaunch.origin,
        },
    )
    return dg.RunRequest(
        run_key=f"relaunch:{run.run_id}",  # one relaunch per run, whatever the ticks
        job_name=job_name,
        asset_selection=[names.key(t) for t in plan.tables],
        partition_key=run.tags.get("dagster/partition"),
        tags=tags,
    )


def _unfinished(
    catalog: Catalog,
    run: dg.DagsterRun,
    instance: dg.DagsterInstance,
    steps: dict[str, set[str]],
    names: Names,
) -> tuple[list[str], list[str]]:
    """(the run's tables, those its steps did not finish). Only tables: a run of another job
    (the control job) has nothing to re-launch."""
    planned = sorted(t for t in run_tables(run, instance, names) if t in catalog.datasets)
    return planned, [t for t in planned if t not in steps["done"] | steps["failed"]]


def _limit(catalog: Catalog, table: str, pipeline: str | None) -> int:
    return max_retries(policy_of(catalog, catalog.datasets[table], pipeline))


def _heal(
    catalog: Catalog,
    diagnosis: Diagnosis,
    failure: Failure,
    tables: list[str],
    run: dg.DagsterRun,
    lake: LakeResource,
    store: ControlStore,
    attempt: int,
) -> None:

    partition = run.tags.get("dagster/partition")
    for table in tables:
        dataset = catalog.datasets[table]
        table_run = TableRun(  # no Spark: the run's process is gone, nothing is built here
            catalog=catalog,
            dataset=dataset,
            lake=lake.lake,
            partition=partition,
            run_id=run.run_id,
            control=store,
        )
        policy = policy_of(catalog, dataset, run.tags.get("pipeline"))
        context = HealingContext(table_run, diagnosis, failure, attempt, policy)
        for action, did in run_actions(context):
            store.record(
                "healing",
                f"dataset:{table}",
                f"{table}: {action}: {did}",
                run_id=run.run_id,
                details={"action": action, "error_code": diagnosis.error_code},
            )


def step_outcomes(
    instance: dg.DagsterInstance, run_id: str, names: Names = DEFAULT_NAMES
) -> dict[str, set[str]]:
    """Tables whose step finished (succeeded or skipped), failed inside the step, or failed
    because its process was interrupted."""
    done, failed, interrupted = set(), set(), set()
    kinds = {
        dg.DagsterEventType.STEP_SUCCESS,
        dg.DagsterEventType.STEP_SKIPPED,
        dg.DagsterEventType.STEP_FAILURE,
    }
    records = instance.get_records_for_run(run_id, of_type=kinds).records
    for record in records:
        event = record.event_log_entry.dagster_event
        if event is None or event.step_key is None:
            continue  # the records asked for are step events: each has both
        table = names.table(event.step_key)
        if event.event_type != dg.DagsterEventType.STEP_FAILURE:
            done.add(table)
            continue
        if was_interrupted(getattr(event.event_specific_data, "error", None)):
            interrupted.add(table)
        else:
            failed.add(table)
    return {"done": done, "failed": failed, "interrupted": interrupted}


def was_interrupted(error: Any) -> bool:
    """Whether a step's error is (or was caused by) the run process being interrupted, e.g. a
    SIGTERM to the run worker: the step did not fail on its own."""
    seen = 0
    while error is not None and seen < 20:
        if "Interrupt" in (error.cls_name or ""):
            return True
        error, seen = error.cause or error.context, seen + 1
    return False


def _failure_reason(event: Any) -> str | None:
    reason = getattr(event.event_specific_data, "failure_reason", None)
    return reason.name if reason is not None else None


def _failure_message(instance: dg.DagsterInstance, run_id: str, event: Any) -> str:
    """What Dagster recorded about the failure, the most specific first: the engine events that
    explain a process that died, then the run failure's message and error."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT).records
    parts = [
        text
        for record in records
        if "process" in (text := _message(record)).lower()
        and any(word in text.lower() for word in ("terminated", "unexpectedly", "signal"))
    ]
    parts.append(event.message or "")
    error = getattr(event.event_specific_data, "error", None)
    if error is not None:
        parts.append(error.message)
    return "\n".join(p for p in parts if p) or "run failed"


def _message(record: Any) -> str:
    entry = record.event_log_entry
    return str(entry.dagster_event.message or entry.user_message or "")
