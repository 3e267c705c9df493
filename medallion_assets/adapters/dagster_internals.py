"""Every name this package takes from Dagster's private modules (``dagster._…``), in one place,
each with the reason; everything else uses ``import dagster as dg``.

``tests/adapters/test_dagster_internals.py`` checks each name still exists with the
parameters used here, so a Dagster upgrade that moves or changes one fails there, by name,
rather than in a run. The pinned range is ``dagster>=1.13,<1.14`` (pyproject.toml).
"""

from __future__ import annotations

# --- `medallion run` on that executor: `execute_in_process` always swaps in its own
# one-step-at-a-time executor; these are what it calls underneath.
from dagster._core.definitions.job_base import InMemoryJob

# --- the threads executor (threads.py): steps of a run on threads of one process, sharing its
# Spark driver. Dagster's public Executor API stops at `execute(plan_context, execution_plan)`;
# running steps needs the plan machinery its own in-process and multiprocess executors use.
from dagster._core.events import EngineEventData  # the engine events of a step's thread
from dagster._core.execution.api import ExecuteRunWithPlanIterable  # a step's event stream

# --- `medallion backfill` launching a Dagster backfill the daemon runs (backfill.py): there
# is no public API to submit one outside the webserver's GraphQL.
from dagster._core.execution.backfill import PartitionBackfill
from dagster._core.execution.compute_logs import create_compute_log_file_key  # per-step logs
from dagster._core.execution.context.system import (  # the contexts an executor is handed
    PlanExecutionContext,
    PlanOrchestrationContext,
)
from dagster._core.execution.context_creation_job import PlanExecutionContextManager
from dagster._core.execution.execute_in_process import core_execute_in_process, merge_run_tags
from dagster._core.execution.plan.active import ActiveExecution  # which steps are ready
from dagster._core.execution.plan.execute_plan import dagster_event_sequence_for_step
from dagster._core.execution.plan.instance_concurrency_context import (  # pools
    InstanceConcurrencyContext,
)
from dagster._core.execution.plan.plan import ExecutionPlan
from dagster._core.execution.plan.step import ExecutionStep
from dagster._core.execution.retries import RetryMode  # the executor's retry mode

# --- the instance's event log (event_log.py): Dagster's SQLite event log with its connections
# kept; the class its dagster.yaml docs name for `event_log_storage`, and the timeout it uses.
from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS

# --- the tag a run's partition is in ("dagster/partition"; Dagster's own constant).
from dagster._core.storage.tags import PARTITION_NAME_TAG
from dagster._core.utils import make_new_backfill_id

# --- the priority run queue (run_queue.py): a QueuedRunCoordinator that orders by priority
# and pre-empts; Dagster exports the class but not the serdes data its constructor takes.
from dagster._serdes import ConfigurableClassData
from dagster._utils.error import serializable_error_info_from_exc_info  # a thread's crash


# --- a step whose checks alone read a running step's table starts beside it (check_inputs.py):
# ActiveExecution keeps each pending step's upstream step keys in ``_pending`` and starts it
# once they have ended; there is no public way to start a step before an upstream step ends.
def pending_dependencies(active: ActiveExecution, step_key: str) -> frozenset[str] | None:
    """The steps ``step_key`` waits for before Dagster starts it; None once it is not pending
    (and always, should a Dagster release keep them elsewhere: steps then start as Dagster
    starts them, and tests/adapters/test_check_inputs.py fails)."""
    pending = getattr(active, "_pending", {})
    found = pending.get(step_key) if isinstance(pending, dict) else None
    return frozenset(found) if isinstance(found, set) else None


def drop_dependencies(active: ActiveExecution, step_key: str, steps: frozenset[str]) -> None:
    """Start ``step_key`` without waiting for ``steps`` (a retry of it waits for them again:
    Dagster then takes its dependencies afresh from the plan)."""
    active._pending[step_key] = active._pending[step_key] - steps


__all__ = [
    "PARTITION_NAME_TAG",
    "SQLITE_BUSY_TIMEOUT_SECONDS",
    "ActiveExecution",
    "ConfigurableClassData",
    "EngineEventData",
    "ExecuteRunWithPlanIterable",
    "ExecutionPlan",
    "ExecutionStep",
    "InMemoryJob",
    "InstanceConcurrencyContext",
    "PartitionBackfill",
    "PlanExecutionContext",
    "PlanExecutionContextManager",
    "PlanOrchestrationContext",
    "RetryMode",
    "SqliteEventLogStorage",
    "core_execute_in_process",
    "create_compute_log_file_key",
    "dagster_event_sequence_for_step",
    "drop_dependencies",
    "make_new_backfill_id",
    "merge_run_tags",
    "pending_dependencies",
    "serializable_error_info_from_exc_info",
]
