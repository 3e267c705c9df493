"""Healing decisions on TheWorldShop's rules: real exceptions classified by type, message and
SQLSTATE, first match wins, unknown failures unclassified; backoff with its cap and jitter."""

from __future__ import annotations

import random

import psycopg
import pytest

from medallion_assets.catalog.operations import RetryPolicy
from medallion_assets.healing.diagnosis import UNCLASSIFIED, Failure, diagnose, retry_delay


def raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:
        return caught


def test_messages_classify_and_the_first_matching_rule_wins(demo_catalog):
    rules = demo_catalog.healing_rules
    slow = diagnose(
        rules, Failure.of(raised(OSError("503 Slow Down: Please reduce your request rate")))
    )
    assert (slow.error_code, slow.actions, slow.then) == (
        "S3_THROTTLED",
        ("reduce_parallelism", "wait"),
        "retry",
    )
    denied = diagnose(rules, Failure.of(raised(PermissionError("AccessDenied: no s3:GetObject"))))
    assert denied.error_code == "ACCESS_DENIED" and denied.permanent
    assert (
        diagnose(rules, Failure.of(raised(ValueError("division by zero")))).error_code
        == UNCLASSIFIED
    )


def test_a_cause_chain_and_a_psycopg_sqlstate_are_seen(demo_catalog):
    try:
        try:
            raise ConnectionResetError("connection reset by peer")
        except ConnectionResetError as inner:
            raise RuntimeError("warehouse load failed") from inner
    except RuntimeError as outer:
        failure = Failure.of(outer)
    assert "ConnectionResetError" in failure.exception_types
    assert diagnose(demo_catalog.healing_rules, failure).error_code == "CONNECTION_RESET"

    error = psycopg.errors.SerializationFailure("could not serialize access")
    failure = Failure.of(raised(error))
    assert "psycopg.errors.SerializationFailure" in failure.exception_types
    # psycopg sets sqlstate on the class; the rule matches on it
    assert failure.sqlstate == "40001"
    assert diagnose(demo_catalog.healing_rules, failure).error_code == "WAREHOUSE_CONFLICT"


@pytest.mark.parametrize(
    ("policy", "attempt", "expected"),
    [
        (RetryPolicy(max_retries=3, delay_seconds=30, backoff="exponential"), 1, 30),
        (RetryPolicy(max_retries=3, delay_seconds=30, backoff="exponential"), 3, 120),
        (
            RetryPolicy(
                max_retries=9, delay_seconds=30, backoff="exponential", max_delay_seconds=100
            ),
            5,
            100,
        ),
        (RetryPolicy(max_retries=3, delay_seconds=5, backoff="fixed"), 4, 5),
    ],
)
def test_backoff(policy, attempt, expected):
    assert retry_delay(policy, attempt) == expected


def test_jitter_stays_in_its_band():
    rng = random.Random(1)
    full = RetryPolicy(max_retries=3, delay_seconds=60, jitter="full")
    band = RetryPolicy(max_retries=3, delay_seconds=60, jitter="plus_minus")
    assert all(0 <= retry_delay(full, 1, rng) <= 60 for _ in range(200))
    values = [retry_delay(band, 1, rng) for _ in range(200)]
    assert all(30 <= v <= 90 for v in values) and max(values) - min(values) > 30
