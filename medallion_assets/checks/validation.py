"""Validate a staged table against its rules before it is published.

``validate_frame`` evaluates every rule of a dataset on the staged Spark DataFrame and returns a
``Validation``: one ``CheckResult`` per rule with passed/failed, the failing row count, the total
and up to five sample failing rows (PII columns masked). Row rules and the schema are judged by
pandera on Spark (``row_rules``); table rules run in Spark SQL (``table_rules``). The results
of a published version and of a rejected output go to the control store (``CheckLedger``), with
what the output was built from, so the same code on the same inputs is not rebuilt only to be
rejected again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from medallion_assets.catalog import Dataset
from medallion_assets.catalog.rules import (
    FreshnessRule,
    QuarantineRateRule,
    ReconciliationRule,
    ReferentialIntegrityRule,
    RowCountRule,
    Rule,
    SqlAssertionRule,
    UniqueRule,
)
from medallion_assets.checks import row_rules, table_rules
from medallion_assets.checks.results import CheckContext, CheckResult, ChecksFailed, Validation
from medallion_assets.lake import Lake, Version

if TYPE_CHECKING:
    from concurrent.futures import Future

    from pyspark.sql import DataFrame

    from medallion_assets.control.check_results import CheckLedger


def data_rules(dataset: Dataset) -> tuple[Rule, ...]:
    """The rules checked on the staged table (reconciliation runs after the warehouse load)."""
    return tuple(r for r in dataset.rules if not isinstance(r, ReconciliationRule))


def validate_frame(
    frame: DataFrame,
    context: CheckContext,
    rules: Sequence[Rule] | None = None,
    total: int | None = None,
) -> Validation:
    """Evaluate ``rules`` (default: every data rule of the dataset) on ``frame``, whose row
    count is ``total`` when the caller has already counted it."""
    chosen = data_rules(context.dataset) if rules is None else tuple(rules)
    if not chosen:
        return Validation()
    if total is None:
        total = frame.count()
    results = []
    for rule in chosen:
        started = time.perf_counter()
        result = evaluate(rule, frame, total, context)
        results.append(replace(result, seconds=round(time.perf_counter() - started, 4)))
    return Validation(tuple(results))


# Rules judged row by row: a row fails or passes whatever the other rows hold.
ROW_BY_ROW = frozenset({"not_null", "accepted_values", "range", "regex"})


@dataclass(frozen=True)
class Change:
    """What an incremental build changed of the version it started from: ``rows``, every row
    of the staged table that is not one of ``since``'s rows unchanged (a MERGE's recomputed
    rows, unique on ``keys``, each replacing the row of its keys); the staged table's other
    rows are ``since``'s, as they were checked."""

    rows: DataFrame
    since: Version
    keys: tuple[str, ...] = ()
    gone: DataFrame | None = None  # the keys of the rows it deleted (a MERGE's)

    def decides(self, rule: Rule) -> bool:
        """Whether ``rule``'s result on the changed rows is its result on the whole table,
        given that ``since`` passed it with no failing row: a row-by-row rule, or uniqueness
        on the MERGE's keys (a MERGE of rows unique on them into a table unique on them)."""
        if rule.kind in ROW_BY_ROW:
            return True
        keys = {k.lower() for k in self.keys}
        return (
            isinstance(rule, UniqueRule)
            and bool(keys)
            and {c.lower() for c in rule.columns} == keys
        )


# Starts a validation on another thread (the step's Spark work beside it, ``spark_jobs.beside``).
Beside = Callable[[Callable[[], Validation]], "Future[Validation]"]


def validate_change(
    frame: DataFrame,
    context: CheckContext,
    total: int,
    change: Change,
    ledger: CheckLedger | None,
    beside: Beside | None = None,
) -> Validation:
    """``validate_frame`` of a staged table that is ``change.since`` with ``change.rows``
    merged in: a rule that ``since`` passed with no failing row (the same rule: the same code
    version) and whose result on the changed rows decides the whole table's
    (``Change.decides``) is judged on them alone; every other rule reads the whole table.
    With ``beside``, the rules on the changed rows are judged while those on the whole table
    are (two frames: pandera keeps each frame's errors on it)."""
    dataset = context.dataset
    recorded = ledger.of(dataset.name, context.partition, "published") if ledger else None
    clean: set[str] = set()
    if (
        recorded is not None
        and recorded.version == change.since.version_id
        and change.since.code_version == dataset.code_version == recorded.code_version
    ):
        clean = {r["name"] for r in recorded.checks if r["passed"] and not r["failing_rows"]}
    rules = data_rules(dataset)
    on_change = [r for r in rules if change.decides(r) and r.label() in clean]
    whole = [r for r in rules if r not in on_change]

    def on_the_change() -> Validation:
        return validate_frame(change.rows, context, on_change, total)

    pending = beside(on_the_change) if beside is not None and on_change and whole else None
    found = {r.name: r for r in validate_frame(frame, context, whole, total).results}
    changed = pending.result() if pending is not None else on_the_change()
    checked = f"the rows this build changed; the others as version {change.since.version_id}"
    for result in changed.results:
        found[result.name] = replace(result, details={**result.details, "checked": checked})
    return Validation(tuple(found[r.label()] for r in rules))


def evaluate(rule: Rule, frame: DataFrame, total: int, context: CheckContext) -> CheckResult:
    if rule.kind in row_rules.PANDERA_KINDS:
        return row_rules.evaluate(rule, frame, total, context)
    if isinstance(rule, RowCountRule):
        return table_rules.row_count(rule, total)
    if isinstance(rule, FreshnessRule):
        return table_rules.freshness(rule, frame, total, context)
    if isinstance(rule, ReferentialIntegrityRule):
        return table_rules.referential_integrity(rule, frame, total, context)
    if isinstance(rule, SqlAssertionRule):
        return table_rules.sql_assertion(rule, frame, total, context)
    if isinstance(rule, QuarantineRateRule):
        return table_rules.quarantine_rate(rule, total, context)
    raise ValueError(f"{rule.kind} rules are not checked on a staged table")


def record_rejection(
    ledger: CheckLedger | None,
    failed: ChecksFailed,
    code_version: str,
    inputs: Mapping[str, str],
    run_id: str = "",
) -> None:
    """Record why an output was not published (for operators) and what it was built from: the
    same code on the same inputs would be rejected again."""
    if ledger is not None:
        ledger.record(
            "rejected",
            failed.table,
            failed.partition,
            str(failed.staging),
            code_version,
            inputs,
            list(failed.validation.as_json()),
            run_id,
        )


def still_rejected(
    ledger: CheckLedger | None,
    lake: Lake,
    table: str,
    partition: str | None,
    code_version: str,
    inputs: Mapping[str, str],
) -> ChecksFailed | None:
    """The recorded rejection of this table (partition) when it was built from this code and
    these inputs: rebuilding would fail the same checks, so nothing is rebuilt."""
    rejected = ledger.of(table, partition, "rejected") if ledger is not None else None
    if rejected is None or not rejected.code_version:
        return None
    if rejected.code_version != code_version or rejected.inputs != dict(inputs):
        return None
    validation = Validation(tuple(CheckResult.from_dict(r) for r in rejected.checks))
    if not validation.blocking_failures:
        return None
    current = lake.current(table, partition)
    return ChecksFailed(
        table,
        partition,
        validation,
        rejected.version,
        current.version_id if current else None,
        since=rejected.recorded_at,
    )


def reused_validation(
    version: Version, context: CheckContext, ledger: CheckLedger | None = None
) -> Validation:
    """Check results for a build skipped because code and inputs are unchanged.

    Results recorded for the reused version are reported again (marked ``reused_from``);
    freshness, which changes with the clock, is judged again from the newest value recorded
    (read again only when none was); any rule without a recorded result is evaluated again on
    the current version.
    """
    recorded = ledger.of(version.table, version.partition, "published") if ledger else None
    found = (
        recorded.checks if recorded is not None and recorded.version == version.version_id else ()
    )
    stored = {r["name"]: CheckResult.from_dict(r) for r in found}
    rules = data_rules(context.dataset)
    fresh: dict[str, CheckResult] = {}
    for rule in rules:  # judged again at this run's clock from the newest value recorded
        old = stored.get(rule.label())
        if isinstance(rule, FreshnessRule) and old is not None and "newest_epoch" in old.details:
            newest = old.details["newest_epoch"]
            fresh[rule.label()] = table_rules.judge_freshness(
                rule, newest, old.total_rows, context.now
            )
    again = [
        r
        for r in rules
        if r.label() not in fresh and (r.label() not in stored or isinstance(r, FreshnessRule))
    ]
    if again:
        frame = context.lake.read(context.spark, [version])
        fresh |= {r.name: r for r in validate_frame(frame, context, again).results}
    results = []
    for rule in rules:
        label = rule.label()
        if label in fresh:
            results.append(fresh[label])
        else:
            old = stored[label]
            results.append(replace(old, details={**old.details, "reused_from": version.version_id}))
    return Validation(tuple(results))


@dataclass(frozen=True)
class BlockedOutput:
    """A table (or partition) whose newest output failed blocking checks and is still the
    newest attempt: no later version was published after it."""

    table: str
    partition: str | None
    rejected_at: float
    staging: str
    failures: tuple[CheckResult, ...]  # the blocking checks that failed
    current: Version | None  # the version that stays current (None: none published)

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "partition": self.partition,
            "rejected_at": self.rejected_at,
            "staging": self.staging,
            "failed_checks": [f.as_dict() for f in self.failures],
            "current_version": self.current.version_id if self.current else None,
        }


def blocked_outputs(ledger: CheckLedger, lake: Lake, table: str) -> list[BlockedOutput]:
    """``table``'s recorded rejected outputs that no later publish superseded."""
    blocked = []
    for kept in ledger.rejections(table):
        current = lake.current(table, kept.partition)
        if current is not None and current.created_at >= kept.recorded_at:
            continue  # a later build passed its checks and was published
        results = [CheckResult.from_dict(r) for r in kept.checks]
        blocked.append(
            BlockedOutput(
                table,
                kept.partition,
                kept.recorded_at,
                kept.version,
                tuple(r for r in results if r.blocking_failure),
                current,
            )
        )
    return blocked
