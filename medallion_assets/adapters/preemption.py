"""The ``run_priorities`` sensor: priorities for queued runs that came without one, and focus
pre-emption.

Each tick (every few seconds, in the daemon):

1. A queued run of the project's tables without ``medallion/profile`` (launched from the UI, an
   asset backfill's run) gets ``dagster/priority`` and ``medallion/profile`` as a request of
   the project would have (``adapters.priority``), so the queue orders it too.
2. A run whose profile has ``preempt_low_priority`` (focus), queued or in progress, terminates
   each running run of lower priority holding a system (pool) it needs (``relaunch.preemption``),
   audited as ``preempt``: who pre-empted whom and why.
3. A pre-empted run, once canceled and once the run that pre-empted it has left the queue, is
   re-queued through the relaunch path (``adapters.relaunch.relaunch_request``): only its
   unfinished tables, with its own priority, tagged with the runs that pre-empted its chain so
   none of them pre-empts it again.
4. While such a run is queued or in progress, every queued run of lower priority needing one of
   its systems (a re-queued one included) is held: tagged ``medallion/held=yes``, which the
   project's queue never starts (a tag limit of 0), audited as ``hold``; released (``no``,
   audited as ``release``) once the claim ends. So the load does not come back beside the
   critical run the moment it has started.

The project's run coordinator does 2 and 4 as it queues each run (``apply_claims``): a focus
run does not wait for the next tick to make room, and no run slips out of the queue between two
ticks. Which runs wait for re-queueing is kept on their tags (``PREEMPTED_TAG``), so a run
pre-empted by either is re-queued by the sensor.
"""

# no "from __future__ import annotations": Dagster reads the hints
from typing import Any

import dagster as dg

from medallion_assets.adapters.kill_switch import owns, run_tables, terminate_run
from medallion_assets.adapters.priority import priority_tags
from medallion_assets.adapters.relaunch import (
    ATTEMPT_TAG,
    ORIGIN_TAG,
    PREEMPTED_BY_TAG,
    Relaunch,
    relaunch_request,
    step_outcomes,
)
from medallion_assets.adapters.resources import ControlResource
from medallion_assets.adapters.translator import DEFAULT_NAMES, Names
from medallion_assets.catalog import Catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.profiles.priority import HOLD_TAG, PRIORITY_TAG, PROFILE_TAG
from medallion_assets.relaunch.preemption import (
    Hold,
    Preemption,
    QueuedRun,
    RunningRun,
    holds,
    preemptions,
)

PRIORITY_SENSOR = "run_priorities"
# On a pre-empted run: "pending" until it is re-queued ("requeued"), and the run it made room for.
PREEMPTED_TAG = "medallion/preempted"
PREEMPTED_FOR_TAG = "medallion/preempted_for"
# A STARTING run is passed over until it has started: terminated while its run worker is still
# coming up, Dagster ends it FAILURE ("exited unexpectedly"), not CANCELED, and it would come back
# through the failure relaunch rather than the pre-emption re-queue. The next tick (5 s) sees it.
_PREEMPTIBLE = [dg.DagsterRunStatus.STARTED]
_IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def build_priority_sensor(
    catalog: Catalog, jobs: list[Any], names: Names = DEFAULT_NAMES
) -> dg.SensorDefinition:
    job_names = {job.name for job in jobs}

    @dg.sensor(
        name=names.name(PRIORITY_SENSOR),
        required_resource_keys={names.resource("control")},
        minimum_interval_seconds=5,  # a critical run should not wait long for its slot
        default_status=dg.DefaultSensorStatus.RUNNING,
        jobs=jobs,
        description="Gives queued runs launched without one their dagster/priority; under a "
        "profile with preempt_low_priority, terminates lower-priority runs holding a system a "
        "queued run needs and re-queues their unfinished tables later.",
    )
    # ``**_``: a direct call (a test's) passes the required resources as keywords too.
    def _priorities(context: dg.SensorEvaluationContext, **_: Any) -> dg.SensorResult:
        control: ControlResource = names.resources_of(context).control
        plane = control.plane()
        instance = context.instance
        done, queued = _claim(catalog, plane, instance, names)
        requests = _requeues(catalog, instance, plane, job_names, names)
        said = "; ".join(done) or f"nothing to pre-empt ({queued} queued)"
        return dg.SensorResult(run_requests=requests, skip_reason=None if requests else said)

    return _priorities


def apply_claims(catalog: Catalog, plane: ControlPlane, instance: dg.DagsterInstance) -> list[str]:
    """Pre-empt and hold as the claims of the runs queued or in progress whose profile
    pre-empts decide; what was done. The project's run coordinator calls it as each run is
    queued, so a focus run terminates the lower runs holding its systems and holds those still
    queued at once, not at the sensor's next tick, and a lower run queued while a focus run
    claims its systems never starts. The sensor re-queues the pre-empted runs later."""
    return _claim(catalog, plane, instance)[0]


def _claim(
    catalog: Catalog,
    plane: ControlPlane,
    instance: dg.DagsterInstance,
    names: Names = DEFAULT_NAMES,
) -> tuple[list[str], int]:
    """``apply_claims``: what was done, and how many runs of the project were queued."""
    queued = _stamped(catalog, plane, instance, names)
    running, started = _in_progress(catalog, plane, instance, names)
    claims = [q for q in queued if q.preempts] + started
    done = [_preempt(instance, plane, p) for p in preemptions(claims, running)]
    return done + _hold(instance, plane, queued, holds(claims, queued)), len(queued)


def _requeues(
    catalog: Catalog,
    instance: dg.DagsterInstance,
    plane: ControlPlane,
    job_names: set[str],
    names: Names,
) -> list[dg.RunRequest]:
    """Re-queue requests for the pre-empted runs (``PREEMPTED_TAG`` pending) that have ended,
    each once the run it made room for has left the queue. Kept on the runs' tags, not in the
    sensor's cursor: the run coordinator pre-empts too."""
    requests = []
    for run in instance.get_runs(filters=dg.RunsFilter(tags={PREEMPTED_TAG: "pending"})):
        by = run.tags.get(PREEMPTED_FOR_TAG, "")
        if not run.is_finished or not owns(run, instance, names):
            continue
        by_run = instance.get_run_by_id(by) if by else None
        if by_run is not None and by_run.status == dg.DagsterRunStatus.QUEUED:
            continue  # re-queued only once the run it made room for has its slot
        instance.add_run_tags(run.run_id, {PREEMPTED_TAG: "requeued"})
        if run.status == dg.DagsterRunStatus.CANCELED:  # else it ended first: nothing to redo
            # queued held while the run it made room for still runs: the next ticks release it
            held = by_run is not None and not by_run.is_finished
            request = _requeue(catalog, instance, plane, run, by, job_names, held, names)
            requests += [request] if request is not None else []
    return requests


def _stamped(
    catalog: Catalog, plane: ControlPlane, instance: dg.DagsterInstance, names: Names
) -> list[QueuedRun]:
    """The queued runs of the project's tables, each given its priority tags if it has none."""
    queued = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.QUEUED])):
        tables = sorted(t for t in run_tables(run, instance, names) if t in catalog.datasets)
        if not tables:
            continue
        tags = dict(run.tags)
        if PROFILE_TAG not in tags:
            added = priority_tags(catalog, plane, tables, run.tags.get("pipeline"))
            instance.add_run_tags(run.run_id, added)
            tags.update(added)
        profile = tags[PROFILE_TAG]
        preempts = _preempts(catalog, profile)
        pools = frozenset(catalog.datasets[t].system for t in tables)
        held = tags.get(HOLD_TAG) == "yes"
        queued.append(QueuedRun(run.run_id, _priority(tags), profile, pools, preempts, held=held))
    return queued


def _preempts(catalog: Catalog, profile: str) -> bool:
    profiles = catalog.profiles
    return (
        profiles is not None
        and profile in profiles.profiles
        and profiles.profiles[profile].settings.preempt_low_priority
    )


def _in_progress(
    catalog: Catalog, plane: ControlPlane, instance: dg.DagsterInstance, names: Names
) -> tuple[list[RunningRun], list[QueuedRun]]:
    """The runs of the project's tables in progress, with the pools of the tables each has not
    finished yet (one without priority tags has the priority its request would have): the
    started ones, which may be pre-empted, and the claims of those whose profile pre-empts."""
    running, claims = [], []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=_IN_PROGRESS)):
        planned = [t for t in run_tables(run, instance, names) if t in catalog.datasets]
        finished = step_outcomes(instance, run.run_id, names)["done"]
        tables = [t for t in planned if t not in finished]
        if not tables:
            continue
        tags = dict(run.tags)
        if PROFILE_TAG not in tags:
            tags.update(priority_tags(catalog, plane, planned, run.tags.get("pipeline")))
        pools = frozenset(catalog.datasets[t].system for t in tables)
        if run.status in _PREEMPTIBLE:
            by = frozenset(filter(None, run.tags.get(PREEMPTED_BY_TAG, "").split(",")))
            running.append(RunningRun(run.run_id, _priority(tags), pools, by))
        if _preempts(catalog, tags[PROFILE_TAG]):
            claim = QueuedRun(run.run_id, _priority(tags), tags[PROFILE_TAG], pools, True, True)
            claims.append(claim)
    return running, claims


def _hold(
    instance: dg.DagsterInstance,
    plane: ControlPlane,
    queued: list[QueuedRun],
    held: dict[str, Hold],
) -> list[str]:
    """Tag each queued run held or released where that changed, audited; what was done."""
    said = []
    for waiting in queued:
        run_id, hold = waiting.run_id, held.get(waiting.run_id)
        if hold is not None and not waiting.held:
            instance.add_run_tags(run_id, {HOLD_TAG: "yes"})
            message = f"run {run_id} (priority {waiting.priority}) {hold.describe()}"
            details = {"by": hold.by.run_id, "pools": list(hold.pools)}
            plane.store().record("hold", "run", message, run_id=run_id, details=details)
            said.append(message)
        elif hold is None and waiting.held:
            instance.add_run_tags(run_id, {HOLD_TAG: "no"})
            message = f"run {run_id} released: no run of higher priority claims its systems"
            plane.store().record("release", "run", message, run_id=run_id)
            said.append(message)
    return said


def _priority(tags: Any) -> int:
    try:
        return int(tags.get(PRIORITY_TAG, "0"))
    except ValueError:  # Dagster's own queue reads an unreadable priority as 0 too
        return 0


def _preempt(instance: dg.DagsterInstance, plane: ControlPlane, preemption: Preemption) -> str:
    """Terminate the victim, tagged for its re-queue (``_requeues``) and audited; what was
    done."""
    why = preemption.describe()
    victim = instance.get_run_by_id(preemption.victim.run_id)
    if victim is None or victim.tags.get(PREEMPTED_TAG) == "pending":
        return why  # being terminated already: the coordinator and the sensor both see it
    tags = {PREEMPTED_TAG: "pending", PREEMPTED_FOR_TAG: preemption.by.run_id}
    instance.add_run_tags(victim.run_id, tags)
    message = terminate_run(instance, victim, f"pre-empted: {why}; terminating it")
    plane.store().record(
        "preempt",
        "run",
        message,
        run_id=victim.run_id,
        details={
            "by": preemption.by.run_id,
            "by_priority": preemption.by.priority,
            "profile": preemption.by.profile,
            "priority": preemption.victim.priority,
            "pools": list(preemption.pools),
        },
    )
    return why


def _requeue(
    catalog: Catalog,
    instance: dg.DagsterInstance,
    plane: ControlPlane,
    run: dg.DagsterRun,
    by: str,
    job_names: set[str],
    held: bool,
    names: Names,
) -> dg.RunRequest | None:
    before = run.tags.get(PREEMPTED_BY_TAG, "")
    # The termination cut every unfinished step short, retries included (a step waiting to
    # retry fails as it is interrupted): all of them go again, not only the interrupted ones.
    steps = step_outcomes(instance, run.run_id, names)
    cut = {
        "done": steps["done"],
        "failed": set(),
        "interrupted": steps["failed"] | steps["interrupted"],
    }
    relaunch = Relaunch(
        run,
        cut,
        int(run.tags.get(ATTEMPT_TAG, "0")),  # pre-emption is not a failure: no retry used
        run.tags.get(ORIGIN_TAG, run.run_id),
        why=f", re-queued after pre-emption by run {by}",
        tags={
            PREEMPTED_BY_TAG: ",".join(filter(None, [*before.split(","), by])),
            HOLD_TAG: "yes" if held else "no",
        },
    )
    return relaunch_request(catalog, instance, plane, relaunch, job_names, names)
