"""What to re-launch after a run failed outside its steps (the run process killed, the run worker
lost): only the tables the run did not finish, and of those only the ones a new run can help.

A table the run finished (or skipped) is done. A table that failed inside its step had its
own classification and retries there, so the run-failure sensor leaves it, and what the run
would have built on it, alone. A table switched off now, or whose relaunch limit (its retry
policy's ``max_retries``) is reached, is left out too, with the reason. Pure: the caller reads
the run's events and the flags, this decides.

    plan = relaunch_plan(catalog, planned, done=succeeded, failed_in_step=failed, ...)
    plan.tables     # ("silver.orders_clean", "gold.revenue")
    plan.left_out   # {"gold.fraud_scores": "downstream of silver.payments, which failed ..."}
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from medallion_assets.catalog import Catalog

# Failure reasons (Dagster's RunFailureReason names) of a run that failed in one of its steps;
# every other reason, or none, means the run failed outside them.
STEP_FAILURE = "STEP_FAILURE"


@dataclass(frozen=True)
class RelaunchPlan:
    tables: tuple[str, ...]
    left_out: Mapping[str, str] = field(default_factory=dict)


def failed_outside_steps(reason: str | None, interrupted_steps: Collection[str]) -> bool:
    """Whether a failed run failed outside its steps: its failure reason is not a step's
    failure, or a step failed only because its process was interrupted."""
    return reason != STEP_FAILURE or bool(interrupted_steps)


def relaunch_plan(
    catalog: Catalog,
    planned: Collection[str],
    *,
    done: Collection[str],
    failed_in_step: Collection[str],
    disabled: Mapping[str, str],
    attempt: int,
    limits: Mapping[str, int],
) -> RelaunchPlan:
    """The planned tables to run again, in catalog order, and why each other unfinished one
    is left out. ``attempt`` is the relaunch this would be (1 = the first); ``limits`` is each
    table's retry limit."""
    left_out: dict[str, str] = {}
    failed = set(failed_in_step)
    tables = []
    for table in (t for t in catalog.datasets if t in planned and t not in done):
        blocked = sorted(_upstream_closure(catalog, table) & failed)
        if table in failed:
            left_out[table] = "failed inside its step (its own retries decided)"
        elif blocked:
            left_out[table] = f"downstream of {', '.join(blocked)}, which failed in its step"
        elif table in disabled:
            left_out[table] = f"switched off: {disabled[table]}"
        elif attempt > limits.get(table, 0):
            left_out[table] = f"relaunch limit reached ({limits.get(table, 0)} retries)"
        else:
            tables.append(table)
    return RelaunchPlan(tuple(tables), left_out)


def _upstream_closure(catalog: Catalog, table: str) -> set[str]:
    seen: set[str] = set()
    stack = list(catalog.datasets[table].upstream)
    while stack:
        name = stack.pop()
        if name in seen or name not in catalog.datasets:
            continue
        seen.add(name)
        stack.extend(catalog.datasets[name].upstream)
    return seen
