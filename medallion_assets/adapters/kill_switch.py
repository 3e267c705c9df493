"""The kill switch in Dagster: schedules that leave switched-off tables out, a sensor that
stops in-flight runs touching a newly disabled entity, and a small job an operator launches
from the UI to flip a flag.

The step-level check (``runtime/step_guard.py``'s ``left_out``) stops a run at the next table
boundary; the sensor is for the table that is executing right now (a long Spark job): within
one tick it terminates the runs that touch a table or pipeline disabled since the previous
tick. Nothing partial is published either way: a terminated step leaves only its staging
folder.
"""

# no "from __future__ import annotations": Dagster reads the hints
from typing import Any

import dagster as dg

from medallion_assets.adapters.priority import priority_tags
from medallion_assets.adapters.resources import ControlResource
from medallion_assets.adapters.translator import DEFAULT_NAMES, Names
from medallion_assets.catalog import Catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.kill_switch.stop import InFlight, Seen, newly_disabled, stop_runs
from medallion_assets.kill_switch.switch import parse_entity

CONTROL_SENSOR = "kill_switch"
CONTROL_JOB = "medallion_control"
IN_FLIGHT = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def run_tables(
    run: dg.DagsterRun, instance: dg.DagsterInstance, names: Names = DEFAULT_NAMES
) -> set[str]:
    """The project's tables a run materializes: its asset selection, else (a job launched
    whole) the steps of its execution plan, one per table (``layer__table``)."""
    if run.asset_selection is not None:
        tables = {names.table_of_key(key) for key in run.asset_selection}
    elif run.execution_plan_snapshot_id is None:
        return set()  # a run that never got a plan executes nothing
    else:
        snapshot = instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
        tables = {names.table(step.key) for step in snapshot.steps}
    return tables - {""}  # another project's of the code location


def owns(run: dg.DagsterRun, instance: dg.DagsterInstance, names: Names) -> bool:
    """Whether ``run`` is one of the project's (with other projects in its code location)."""
    return owns_tables(run_tables(run, instance, names), names)


def owns_tables(tables: set[str], names: Names) -> bool:
    """Whether a run materializing ``tables`` (``run_tables``) is one of the project's."""
    return not names.prefix or bool(tables)


def build_control_sensor(catalog: Catalog, names: Names = DEFAULT_NAMES) -> dg.SensorDefinition:
    @dg.sensor(
        name=names.name(CONTROL_SENSOR),
        required_resource_keys={names.resource("control")},
        # One store query and one small file read per tick: cheap enough to react within
        # seconds to a flag an operator flips because a table is doing damage.
        minimum_interval_seconds=5,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Terminates in-flight runs that touch a table or pipeline disabled since "
        "the previous tick (control.yaml or the control store).",
    )
    # ``**_``: a direct call (a test's) passes the required resources as keywords too.
    def _kill_switch(context: dg.SensorEvaluationContext, **_: Any) -> Any:
        plane = names.resources_of(context).control.plane()
        flags = plane.flags()
        now = Seen(
            frozenset(plane.disabled(catalog, flags=flags)),
            frozenset(n for (s, n), f in flags.items() if s == "pipeline" and not f.enabled),
        )
        new = newly_disabled(Seen.parse(context.cursor), now)
        stopped: list[str] = []
        if new.tables or new.pipelines:
            instance = context.instance
            in_flight = []
            for run in instance.get_runs(filters=dg.RunsFilter(statuses=IN_FLIGHT)):
                tables = run_tables(run, instance, names)  # its plan read once per run
                in_flight.append(
                    InFlight(
                        run.run_id,
                        frozenset(tables),
                        run.tags.get("pipeline"),
                        owns_tables(tables, names),
                    )
                )
            store = plane.store()
            stopped = stop_runs(
                in_flight,
                new,
                DagsterRuns(instance),
                lambda kind, entity, message, run_id, details: store.record(
                    kind, entity, message, run_id=run_id, details=dict(details)
                ),
            )
        context.update_cursor(now.cursor())
        if not stopped:
            return dg.SkipReason(
                f"{len(now.tables)} table(s) disabled; no in-flight run touches a newly "
                "disabled one"
            )
        return dg.SkipReason(f"terminated run(s) {', '.join(stopped)}")

    return _kill_switch


class DagsterRuns:
    """The kill switch's ``RunEnder`` on a Dagster instance."""

    def __init__(self, instance: dg.DagsterInstance):
        self.instance = instance

    def end(self, run_id: str, message: str) -> str:
        run = self.instance.get_run_by_id(run_id)
        return message if run is None else terminate_run(self.instance, run, message)


def terminate_run(instance: dg.DagsterInstance, run: dg.DagsterRun, message: str) -> str:
    """Cancel a queued run, or terminate a started one (its steps are interrupted, nothing
    is published, the run ends canceled); returns ``message`` with what did not work."""
    if run.status == dg.DagsterRunStatus.QUEUED:
        instance.run_coordinator.cancel_run(run.run_id)
    else:
        instance.report_run_canceling(run, message=message)
        if not instance.run_launcher.terminate(run.run_id):
            message += " (the run launcher could not reach its run worker)"
    return message


class FlagChange(dg.Config):
    """One flag flip, as an operator fills it in the launchpad."""

    entity: str  # SCOPE:NAME, e.g. dataset:gold.revenue_by_region, source:orders, layer:gold
    enabled: bool
    reason: str
    changed_by: str = "dagster-ui"


def build_control_job(
    catalog: Catalog,
    names: Names = DEFAULT_NAMES,
    executor: dg.ExecutorDefinition | None = None,
) -> dg.JobDefinition:
    @dg.op(name=names.name("set_control_flag"), required_resource_keys={names.resource("control")})
    def set_control_flag(context: dg.OpExecutionContext, config: FlagChange) -> None:
        control: ControlResource = names.resources_of(context).control
        try:
            scope, name = parse_entity(catalog, config.entity)
        except ValueError as error:
            raise dg.Failure(str(error), allow_retries=False) from error
        flag = (
            control.plane()
            .store()
            .set_flag(scope, name, config.enabled, config.reason, config.changed_by)
        )
        verb = "enabled" if flag.enabled else "disabled"
        context.log.info(f"{flag.entity} {verb} by {flag.changed_by}: {flag.reason}")

    @dg.job(
        name=names.name(CONTROL_JOB),
        executor_def=executor,
        description="Flip a kill-switch flag (pipeline, layer, dataset, source, target) in the "
        "control store; takes effect at the next table boundary of every run.",
        tags={"medallion/kind": "control"},
    )
    def medallion_control() -> None:
        set_control_flag()

    return medallion_control


def pipeline_schedule(
    catalog: Catalog,
    pipeline_id: str,
    job: "dg.UnresolvedAssetJobDefinition",
    cron: str,
    tables: tuple[list[str], list[str]],  # the pipeline's whole tables, its daily ones
    status: dg.DefaultScheduleStatus,
    partitions: dg.PartitionsDefinition[str] | None = None,  # the daily tables' partitions
    names: Names = DEFAULT_NAMES,
) -> dg.ScheduleDefinition:

    @dg.schedule(
        name=f"{job.name}_schedule",
        job=job,
        cron_schedule=cron,
        default_status=status,
        execution_timezone="UTC",
        required_resource_keys={names.resource("control")},
    )
    # ``**_``: a direct call (a test's) passes the required resources as keywords too.
    def _tick(context: dg.ScheduleEvaluationContext, **_: Any) -> Any:
        plane = names.resources_of(context).control.plane()
        plain, daily = tables
        off = plane.disabled(catalog, [*plain, *daily], [pipeline_id])
        if len(off) == len(plain) + len(daily):
            reasons = "; ".join(d.describe() for d in off.values())
            return dg.SkipReason(f"every table of {job.name} is switched off: {reasons}")
        when = context.scheduled_execution_time
        requests = []
        wanted = [t for t in plain if t not in off]
        if wanted:
            stamp = when.isoformat() if when else "now"
            requests.append(_request(catalog, plane, pipeline_id, wanted, stamp, None, names))
        wanted = [t for t in daily if t not in off]
        if wanted and partitions is not None:
            # The day that just ended, as of the tick's scheduled time (not the clock's now).
            with dg.partition_loading_context(effective_dt=when):
                day = partitions.get_last_partition_key()
            if day is not None:  # the run key launches each day once, at its first tick
                requests.append(_request(catalog, plane, pipeline_id, wanted, day, day, names))
        return requests or dg.SkipReason(f"no complete day yet for {job.name}")

    return _tick


def _request(
    catalog: Catalog,
    plane: ControlPlane,
    pipeline_id: str,
    tables: list[str],
    key: str,
    partition: str | None,
    names: Names,
) -> dg.RunRequest:
    return dg.RunRequest(
        run_key=f"{pipeline_id}:{key}",
        asset_selection=[names.key(t) for t in tables],
        partition_key=partition,
        # read now: `medallion control profile` changes the next tick's priority
        tags={"pipeline": pipeline_id, **priority_tags(catalog, plane, tables, pipeline_id)},
    )


def build_run_audit_sensors(names: Names = DEFAULT_NAMES) -> list[Any]:
    """Run outcomes into the audit log: one entry per run that succeeded, failed or was
    canceled, with its job, tags and the steps that failed (the daemon evaluates these)."""

    def audit(status: Any, verb: str) -> Any:
        # ``**_``: a direct call (a test's) passes the required resources as keywords too.
        def _audit(context: dg.RunStatusSensorContext, **_: Any) -> None:
            run = context.dagster_run
            if not owns(run, context.instance, names):
                return  # another project's run, audited in its own control store
            control: ControlResource = names.resources_of(context).control
            tables = sorted(run_tables(run, context.instance, names))
            details = {"job": run.job_name, "tables": tables, "tags": dict(run.tags)}
            message = f"run of {run.job_name} {verb}"
            if verb == "failed":
                failed = [
                    e.step_key
                    for e in context.instance.all_logs(
                        run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE
                    )
                    if e.step_key is not None
                ]
                details["failed_steps"] = failed
                steps = ", ".join(s for s in failed if s) or "none (the run itself)"
                message += f"; failed steps: {steps}"
            control.plane().store().record(
                "run", "run", message, run_id=run.run_id, details=details
            )

        # The class rather than the decorator: the decorator takes resources only as
        # parameters named after their keys, and a project's keys carry its prefix.
        return dg.RunStatusSensorDefinition(
            name=names.name(f"audit_run_{verb.split()[-1]}"),
            run_status=status,
            run_status_sensor_fn=_audit,
            monitor_all_code_locations=False,
            default_status=dg.DefaultSensorStatus.RUNNING,
            description=f"Records every run that {verb} in the control store's audit log.",
            required_resource_keys={names.resource("control")},
        )

    return [
        audit(dg.DagsterRunStatus.SUCCESS, "succeeded"),
        audit(dg.DagsterRunStatus.FAILURE, "failed"),
        audit(dg.DagsterRunStatus.CANCELED, "was canceled"),
    ]
