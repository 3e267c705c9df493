"""What a Dagster step does when its table's run fails: audit, heal, then retry or fail.

One retry mechanism: the step raises ``dg.RetryRequested`` with the delay the planner computed,
or ``dg.Failure(allow_retries=False)``; the assets carry no Dagster ``RetryPolicy``. Why this
one and not a ``RetryPolicy`` with healing before it: a reroute must retry at once and may go
past the policy's limit (one attempt per route), a permanent error must not be retried at all,
the healing rule decides per error what happens, and the policy's ``max_delay_seconds`` cap has
no Dagster counterpart. A ``RetryPolicy`` could express none of these, so it would need
``RetryRequested`` beside it, which is the two mechanisms issue 13 removed. Whether and when is
decided in one place, ``healing.retry.decide``; this module only carries it out.

A run that fails outside its steps (a killed run process) is not a step failure: the
run-failure sensor heals and re-launches it (``adapters/relaunch.py``), with the same
``policy_of``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import dagster as dg

from medallion_assets.adapters.run_summary import RETRYABLE
from medallion_assets.errors import causes
from medallion_assets.healing.actions import HealingContext, places_of, run_actions
from medallion_assets.healing.diagnosis import diagnose
from medallion_assets.healing.evidence import failure_with_evidence
from medallion_assets.healing.retry import decide, policy_of
from medallion_assets.recovery.reroute import PRIMARY
from medallion_assets.runtime.step_guard import Audit
from medallion_assets.runtime.table_run import TableRun

if TYPE_CHECKING:
    pass

# A run tagged so (``medallion build --no-retry``: an orchestrator's task, retried by the
# orchestrator with the same policy) makes one attempt per step: it heals as ever, the healing
# kept in the control store for the next attempt, and fails where it would have retried.
RETRY_TAG = "medallion/retries"
RETRIES_BY_ORCHESTRATOR = "orchestrator"


def heal_and_retry(
    context: dg.AssetExecutionContext,
    run: TableRun,
    audit: Audit,
    error: Exception,
    spark: Callable[[], Any],
    spark_log: Path | None = None,
) -> NoReturn:
    """Classify the error by the healing rules, run their actions, then retry with the
    policy's backoff, or fail at once when the rule says the error is permanent. Raises.
    ``spark``: the run's Spark session now (its healing actions use it); ``spark_log``: where
    the driver's own lines go (an out-of-memory that shut the driver down is said only there)."""
    if interrupted(context, error):
        audit.record("outcome", "interrupted: the run is being terminated; not retried")
        raise error
    name = run.dataset.name
    failure = failure_with_evidence(error, places_of(run), spark_log)
    diagnosis = diagnose(run.catalog.healing_rules, failure)
    first_line = failure.summary  # a Java trace's root cause, not its 500 lines
    audit.record(
        "error",
        f"{diagnosis.error_code} ({type(error).__name__}): {first_line}",
        rule=diagnosis.rule,
        sqlstate=failure.sqlstate,
        then=diagnosis.then,
        system=failure.system or None,
    )
    policy = policy_of(run.catalog, run.dataset, context.run.tags.get("pipeline"))
    if diagnosis.permanent:
        fix = f". Fix: {diagnosis.fix}" if diagnosis.fix else ""
        message = (
            f"{name}: {diagnosis.error_code} is permanent ({diagnosis.source()}); "
            f"failing without retries: {first_line}{fix}"
        )
        audit.record("outcome", f"failed fast: {diagnosis.error_code}, not retried")
        raise dg.Failure(
            description=message, allow_retries=False, metadata={RETRYABLE: False}
        ) from error
    # Spark as the step has it now: refresh_connection drops a Spark Connect session.
    healed = replace(run, spark=spark(), control=audit.store)
    healing = HealingContext(healed, diagnosis, failure, audit.attempt, policy, error=error)
    routed_before = audit.store.routes().get(name)
    healed_by = []
    for action, did in run_actions(healing):
        audit.record("healing", f"{action}: {did}", action=action, error_code=diagnosis.error_code)
        healed_by.append(f"{action}: {did}")
    # What the retry's event (the console's "retrying" line, the UI's event log) says: what
    # the healing did, then the error's class and line.
    reason = Retrying("; ".join([*healed_by, f"{diagnosis.error_code}: {first_line}"]))
    rerouted = audit.store.routes().get(name)
    decision = decide(diagnosis, policy, audit.attempt, rerouted=rerouted != routed_before)
    if decision.action == "no_route":
        audit.record("outcome", f"failed: {diagnosis.error_code}, no route left to take")
        raise dg.Failure(
            description=f"{name}: {diagnosis.error_code} (healing rule "
            f"{diagnosis.rule}) and no replica or alternate is left to reroute to: "
            f"{first_line}",
            allow_retries=False,
            metadata={RETRYABLE: False},
        ) from error
    if context.run.tags.get(RETRY_TAG) == RETRIES_BY_ORCHESTRATOR:
        audit.record("outcome", f"failed: {diagnosis.error_code}; the orchestrator retries")
        raise dg.Failure(
            description=f"{name}: {diagnosis.error_code}: {first_line} (one attempt: the "
            "orchestrator running medallion build --no-retry retries it, healed)",
            allow_retries=False,
            metadata={RETRYABLE: True},
        ) from error
    if decision.action == "reroute":
        route = rerouted.route if rerouted is not None else PRIMARY
        audit.record("retry", f"retrying at once along route {route}")
        raise dg.RetryRequested(max_retries=decision.max_retries) from _chained(reason, error)
    if not decision.retried:
        audit.record("outcome", f"failed after {audit.attempt} attempt(s): {diagnosis.error_code}")
        raise dg.Failure(  # one line; the error and its trace stay in the event log as the cause
            description=f"{name}: failed after {audit.attempt} attempt(s), "
            f"{diagnosis.error_code}: {first_line}",
            allow_retries=False,
        ) from error
    delay = decision.delay_seconds
    audit.record(
        "retry", f"retrying in {delay:.1f} s (retry {audit.attempt} of {decision.max_retries})"
    )
    raise dg.RetryRequested(max_retries=decision.max_retries, seconds_to_wait=delay) from _chained(
        reason, error
    )


class Retrying(Exception):
    """Why a step retries, in one line: chained between Dagster's ``RetryRequested`` (which
    says nothing) and the step's error."""


def _chained(reason: Retrying, error: BaseException) -> Retrying:
    reason.__cause__ = error
    return reason


def interrupted(context: dg.AssetExecutionContext, error: BaseException) -> bool:
    """The step failed because its run is being terminated (the kill switch sensor, the UI's
    Terminate): the error is the interruption or what it broke (a Spark job cancelled), and a
    retry would only defeat the termination."""
    if any(isinstance(e, dg.DagsterExecutionInterruptedError) for e in causes(error)):
        return True
    run = context.instance.get_run_by_id(context.run.run_id)
    return run is not None and run.status in (
        dg.DagsterRunStatus.CANCELING,
        dg.DagsterRunStatus.CANCELED,
    )
