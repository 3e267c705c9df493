"""Retry and self-healing decisions: classify a failure, say what to do, and when to retry.

``diagnose`` matches a failure against the healing rules of ``policies.yaml`` in file order
(the first rule whose every given field matches wins) and returns a ``Diagnosis``: the error
code, the actions to run, and then ``retry``, ``fail`` (a permanent error: no retry) or
``reroute``. A failure no rule matches is ``UNCLASSIFIED`` and retried by the retry policy.
``retry_delay`` is the policy's backoff for an attempt. Pure: no I/O, the clock and the random
source are arguments.

    failure = Failure.of(error)
    diagnosis = diagnose(catalog.healing_rules, failure)
    diagnosis.error_code, diagnosis.actions, diagnosis.then  # "CONNECTION_RESET", (...), "retry"
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from medallion_assets.catalog.operations import HealingRule, RetryPolicy

UNCLASSIFIED = "UNCLASSIFIED"


@dataclass(frozen=True)
class Failure:
    """What is known of an exception: its class and its bases (names and dotted paths), the
    message of it and of its causes, and a SQLSTATE if any exception in the chain has one."""

    exception_types: tuple[str, ...]
    message: str
    sqlstate: str | None = None

    @classmethod
    def of(cls, error: BaseException) -> Failure:
        types: list[str] = []
        messages: list[str] = []
        sqlstate = None
        for current in causes(error):
            for klass in type(current).__mro__:
                if klass is object:
                    continue
                types += [klass.__name__, f"{klass.__module__}.{klass.__qualname__}"]
            messages.append(f"{type(current).__name__}: {current}")
            sqlstate = sqlstate or _sqlstate(current)
        return cls(tuple(dict.fromkeys(types)), "\n".join(messages), sqlstate)


def causes(error: BaseException | None) -> Iterator[BaseException]:
    """``error``, then what caused it (``raise ... from``, or the error being handled when it
    was raised), and so on; each once."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


@dataclass(frozen=True)
class Diagnosis:
    error_code: str
    rule: str | None  # the healing rule's name; None when unclassified
    actions: tuple[str, ...] = ()
    then: str = "retry"  # retry | fail | reroute

    @property
    def permanent(self) -> bool:
        return self.then == "fail"


def matches(rule: HealingRule, failure: Failure) -> bool:
    signature = rule.match
    if signature.exception and signature.exception not in failure.exception_types:
        return False
    if signature.message and not re.search(signature.message, failure.message):
        return False
    return not (signature.sqlstate and signature.sqlstate != failure.sqlstate)


def diagnose(rules: Sequence[HealingRule], failure: Failure) -> Diagnosis:
    for rule in rules:
        if matches(rule, failure):
            actions = rule.actions
            if rule.then == "reroute" and "reroute_source" not in actions:
                actions = (*actions, "reroute_source")  # `then: reroute` is what it says
            return Diagnosis(rule.error_code, rule.name, actions, rule.then)
    return Diagnosis(UNCLASSIFIED, None)


def retry_delay(policy: RetryPolicy, attempt: int, rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1 = the first retry): the policy's
    delay, doubled per attempt when exponential, capped at ``max_delay_seconds``, then
    jittered (full: uniform in [0, d]; plus_minus: d +/- up to half of d)."""
    delay = policy.delay_seconds
    if policy.backoff == "exponential":
        delay *= 2 ** max(attempt - 1, 0)
    if policy.max_delay_seconds is not None:
        delay = min(delay, policy.max_delay_seconds)
    rng = rng or random.Random()
    if policy.jitter == "full":
        return rng.uniform(0, delay)
    if policy.jitter == "plus_minus":
        return max(0.0, delay + rng.uniform(-delay / 2, delay / 2))
    return delay


def _sqlstate(error: BaseException) -> str | None:
    for attribute in ("sqlstate", "pgcode"):
        value = getattr(error, attribute, None)
        if isinstance(value, str) and len(value) == 5:
            return value
    diag = getattr(error, "diag", None)  # psycopg
    value = getattr(diag, "sqlstate", None) if diag is not None else None
    return value if isinstance(value, str) else None
