"""Whether and when a failed step is retried: the one place that decides it.

A step's failure is classified first (``diagnosis.diagnose``) and its healing actions run; then
``decide`` says what happens to the step, from the diagnosis, the retry policy in force
(``policy_of``) and the attempt that just failed:

- a permanent error fails at once, whatever the policy;
- a reroute that moved the table to a new route retries at once, even past the policy's
  limit (the walk through the routes is finite: each is taken once, in cost order); a reroute
  with no route left fails;
- anything else is retried after the policy's backoff (``diagnosis.retry_delay``) until
  ``max_retries`` retries were spent, then fails.

The Dagster step carries out the decision (``adapters/retry.py``); nothing else retries it: the
assets carry no Dagster ``RetryPolicy``. Pure: no I/O; the random source of the jitter is an
argument.

>>> from medallion_assets.catalog.operations import RetryPolicy
>>> from medallion_assets.healing.diagnosis import Diagnosis
>>> policy = RetryPolicy(max_retries=2, delay_seconds=10, backoff="exponential")
>>> decide(Diagnosis("TIMEOUT", "slow"), policy, attempt=2)
RetryDecision(action='retry', max_retries=2, delay_seconds=20.0)
>>> decide(Diagnosis("TIMEOUT", "slow"), policy, attempt=3).action
'exhausted'
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.operations import RetryPolicy
from medallion_assets.healing.diagnosis import Diagnosis, retry_delay

# fail_permanent: the error is permanent; no_route: a reroute found no route left;
# exhausted: the policy's retries are spent.
Action = Literal["retry", "reroute", "fail_permanent", "no_route", "exhausted"]


@dataclass(frozen=True)
class RetryDecision:
    """What happens to a failed step: ``retry``/``reroute`` (the step runs again after
    ``delay_seconds``, as long as it has run fewer than ``max_retries + 1`` times) or one of
    the failures."""

    action: Action
    max_retries: int = 0
    delay_seconds: float = 0.0

    @property
    def retried(self) -> bool:
        return self.action in ("retry", "reroute")


def policy_of(
    catalog: Catalog, dataset: Dataset, pipeline: str | None = None
) -> RetryPolicy | None:
    """The retry policy in force: the dataset's own, else its pipeline's default (the run's
    pipeline), else the project default."""
    run_pipeline = catalog.pipelines.get(pipeline) if pipeline else None
    name = (
        dataset.settings.retry_policy
        or (run_pipeline.retry_policy if run_pipeline else None)
        or catalog.default_retry_policy
    )
    return catalog.retry_policies[name] if name else None


def max_retries(policy: RetryPolicy | None) -> int:
    return policy.max_retries if policy is not None else 0


def decide(
    diagnosis: Diagnosis,
    policy: RetryPolicy | None,
    attempt: int,
    *,
    rerouted: bool = False,
    rng: random.Random | None = None,
) -> RetryDecision:
    """The decision after attempt number ``attempt`` (1 = the first) failed with
    ``diagnosis``; ``rerouted``: its healing moved the table to a new route."""
    retries = max_retries(policy)
    if diagnosis.permanent:
        return RetryDecision("fail_permanent")
    if diagnosis.then == "reroute":
        if not rerouted:
            return RetryDecision("no_route")
        return RetryDecision("reroute", max(retries, attempt))
    if attempt > retries or policy is None:
        return RetryDecision("exhausted", retries)
    return RetryDecision("retry", retries, retry_delay(policy, attempt, rng))
