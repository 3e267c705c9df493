"""The one retry decision of a failed step: permanent errors fail, reroutes retry at once, the
rest retry after the policy's backoff until its retries are spent."""

from __future__ import annotations

import random

import pytest

from medallion_assets.catalog.operations import RetryPolicy
from medallion_assets.healing.diagnosis import Diagnosis, retry_delay
from medallion_assets.healing.retry import decide

POLICY = RetryPolicy(max_retries=2, delay_seconds=5, backoff="exponential")
TRANSIENT = Diagnosis("CONNECTION_RESET", "reset")


@pytest.mark.parametrize(("attempt", "delay"), [(1, 5.0), (2, 10.0)])
def test_a_transient_error_is_retried_after_the_policys_backoff(attempt, delay):
    decision = decide(TRANSIENT, POLICY, attempt)
    assert (decision.action, decision.max_retries, decision.delay_seconds) == (
        "retry",
        2,
        delay,
    )
    assert decision.retried


def test_retries_stop_when_the_policys_are_spent_or_there_is_no_policy():
    assert decide(TRANSIENT, POLICY, attempt=3).action == "exhausted"
    assert decide(TRANSIENT, None, attempt=1).action == "exhausted"
    assert not decide(TRANSIENT, None, attempt=1).retried
    none = RetryPolicy(max_retries=0)
    assert decide(TRANSIENT, none, attempt=1).action == "exhausted"


def test_a_permanent_error_fails_whatever_the_policy_allows():
    permanent = Diagnosis("CORRUPT_OBJECT", "corrupt_object", then="fail")
    decision = decide(permanent, POLICY, attempt=1, rerouted=True)
    assert decision.action == "fail_permanent" and not decision.retried


def test_a_reroute_retries_at_once_even_past_the_policys_limit():
    reroute = Diagnosis("SOURCE_DOWN", "down", ("reroute_source",), then="reroute")
    past_limit = decide(reroute, POLICY, attempt=5, rerouted=True)
    assert (past_limit.action, past_limit.delay_seconds) == ("reroute", 0.0)
    assert past_limit.max_retries == 5  # the attempt that just failed may run again
    assert decide(reroute, None, attempt=1, rerouted=True).max_retries == 1
    assert decide(reroute, POLICY, attempt=1, rerouted=False).action == "no_route"


def test_the_jitter_comes_from_the_given_random_source():
    jittery = RetryPolicy(max_retries=3, delay_seconds=60, jitter="full")
    decided = decide(TRANSIENT, jittery, attempt=1, rng=random.Random(7))
    assert decided.delay_seconds == retry_delay(jittery, 1, random.Random(7))
