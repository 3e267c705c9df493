"""Validate a staged table against its rules before it is published.

``validate_frame`` evaluates every rule of a dataset on the staged Spark DataFrame and returns a
``Validation``: one ``CheckResult`` per rule with passed/failed, the failing row count, the total
and up to five sample failing rows (PII columns masked). Rules pandera can express (not_null,
unique, accepted_values, range, regex, schema) are judged by pandera on Spark; when pandera
reports a failure the same predicate is counted and sampled in Spark SQL, since pandera's
Spark errors carry no counts. The other kinds run in Spark SQL (see ``rule_checks``).

A ``Validation`` with a failed ``error``-severity result is blocking: the build raises
``ChecksFailed``, the output stays in staging and the previous version stays current.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.rules import ReconciliationRule, Rule
from medallion_assets.runtime.lake import REJECTED, Lake

SAMPLE_ROWS = 5
MASKED = "<masked pii>"
_MAX_TEXT = 200  # characters of one sample value


@dataclass(frozen=True)
class CheckResult:
    name: str
    kind: str
    severity: str  # "error" blocks publishing, "warn" does not
    passed: bool
    failing_rows: int
    total_rows: int
    message: str
    samples: tuple[dict[str, Any], ...] = ()
    engine: str = "spark_sql"  # or "pandera"
    details: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def blocking_failure(self) -> bool:
        return not self.passed and self.severity == "error"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["samples"] = list(self.samples)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckResult:
        values = dict(data)
        values["samples"] = tuple(values.get("samples", ()))
        return cls(**values)


@dataclass(frozen=True)
class Validation:
    results: tuple[CheckResult, ...] = ()

    @property
    def blocking_failures(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.blocking_failure)

    @property
    def passed(self) -> bool:
        return not self.blocking_failures

    def as_json(self) -> list[dict[str, Any]]:
        return [r.as_dict() for r in self.results]


class ChecksFailed(RuntimeError):
    """Blocking checks failed: the staged output was not published."""

    def __init__(
        self,
        table: str,
        partition: str | None,
        validation: Validation,
        staging: Path,
        current: str | None,
        since: float | None = None,
    ):
        self.table = table
        self.partition = partition
        self.validation = validation
        self.staging = staging
        self.current = current
        self.since = since  # set when an earlier run's rejection still holds (nothing rebuilt)
        failures = validation.blocking_failures
        where = f"{table}[{partition}]" if partition else table
        kept = f"version {current} stays current" if current else "no version was ever published"
        if since is None:
            head = f"{where} not published: {len(failures)} blocking check(s) failed"
        else:
            head = (
                f"{where} still blocked since "
                f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(since))} (code and inputs "
                "unchanged, not rebuilt)"
            )
        lines = [f"{head}; {kept}; the rejected output is kept in {staging}"]
        lines += [
            f"  - {r.name} ({r.kind}): {r.message} ({r.failing_rows:,} failing rows)"
            for r in failures
        ]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class CheckContext:
    """What checks may read besides the staged frame."""

    spark: Any
    lake: Lake
    catalog: Catalog
    dataset: Dataset
    partition: str | None = None
    quarantine: Any = None  # bronze: the staged quarantine DataFrame
    records_read: int | None = None  # bronze: records read from the raw objects
    now: float = field(default_factory=time.time)

    @property
    def pii_columns(self) -> frozenset[str]:
        columns = set(self.dataset.pii_columns)
        for _name, source in self.catalog.raw_sources(self.dataset):
            columns.update(source.pii_columns)
        return frozenset(columns)


def data_rules(dataset: Dataset) -> tuple[Rule, ...]:
    """The rules checked on the staged table (reconciliation runs after the warehouse load)."""
    return tuple(r for r in dataset.rules if not isinstance(r, ReconciliationRule))


def validate_frame(
    frame: Any,
    context: CheckContext,
    rules: Sequence[Rule] | None = None,
    total: int | None = None,
) -> Validation:
    """Evaluate ``rules`` (default: every data rule of the dataset) on ``frame``, whose row
    count is ``total`` when the caller has already counted it."""
    from medallion_assets.runtime.rule_checks import evaluate

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


def sample_rows(frame: Any, pii: frozenset[str], limit: int = SAMPLE_ROWS) -> tuple[dict, ...]:
    """Up to ``limit`` rows of ``frame`` as JSON-safe dicts, PII columns masked."""
    rows = frame.limit(limit).collect()
    return tuple(
        {k: (MASKED if k in pii and v is not None else _plain(v)) for k, v in r.asDict().items()}
        for r in rows
    )


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def rejected_marker(
    staging: Path, validation: Validation, code_version: str = "", inputs: Mapping[str, str] = {}
) -> None:
    """Record in the kept staging folder why it was not published (for operators), and what it
    was built from: the same code on the same inputs would be rejected again."""
    (staging / REJECTED).write_text(
        json.dumps(
            {
                "rejected_at": time.time(),
                "checks": validation.as_json(),
                "code_version": code_version,
                "inputs": dict(inputs),
            },
            indent=1,
            default=str,
        )
    )


def still_rejected(
    lake: Lake,
    table: str,
    partition: str | None,
    code_version: str,
    inputs: Mapping[str, str],
) -> ChecksFailed | None:
    """The kept rejection of this table (partition) when it was built from this code and these
    inputs: rebuilding would fail the same checks, so nothing is rebuilt."""
    rejected = lake.rejected(table, partition)
    if rejected is None or not rejected.get("code_version"):
        return None
    if rejected["code_version"] != code_version or rejected.get("inputs") != dict(inputs):
        return None
    validation = Validation(tuple(CheckResult.from_dict(r) for r in rejected.get("checks", ())))
    if not validation.blocking_failures:
        return None
    current = lake.current(table, partition)
    return ChecksFailed(
        table,
        partition,
        validation,
        Path(rejected["staging"]),
        current.version_id if current else None,
        since=float(rejected["rejected_at"]),
    )


def reused_validation(version: Any, context: CheckContext) -> Validation:
    """Check results for a build skipped because code and inputs are unchanged.

    Results stored with the reused version are reported again (marked ``reused_from``);
    freshness, which changes with the clock, and any rule without a stored result are
    evaluated again on the current version.
    """
    from medallion_assets.catalog.rules import FreshnessRule

    stored = {r["name"]: CheckResult.from_dict(r) for r in version.extra.get("checks", ())}
    rules = data_rules(context.dataset)
    again = [r for r in rules if isinstance(r, FreshnessRule) or r.label() not in stored]
    fresh: dict[str, CheckResult] = {}
    if again:
        frame = context.spark.read.parquet(str(context.lake.version_path(version)))
        fresh = {r.name: r for r in validate_frame(frame, context, again).results}
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
    current: Any  # the TableVersion that stays current, or None when none was published

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "partition": self.partition,
            "rejected_at": self.rejected_at,
            "staging": self.staging,
            "failed_checks": [f.as_dict() for f in self.failures],
            "current_version": self.current.version_id if self.current else None,
        }


def blocked_outputs(lake: Lake, table: str) -> list[BlockedOutput]:
    """What the lake keeps of ``table``'s rejected outputs that no later publish superseded."""
    blocked = []
    for kept in lake.rejections(table):
        current = lake.current(table, kept["partition"])
        if current is not None and current.created_at >= kept["rejected_at"]:
            continue  # a later build passed its checks and was published
        results = [CheckResult.from_dict(r) for r in kept.get("checks", ())]
        blocked.append(
            BlockedOutput(
                table,
                kept["partition"],
                float(kept["rejected_at"]),
                kept["staging"],
                tuple(r for r in results if r.blocking_failure),
                current,
            )
        )
    return blocked
