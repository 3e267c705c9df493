"""What a check reports: one ``CheckResult`` per rule, a ``Validation`` of a staged table, the
``ChecksFailed`` error that keeps it unpublished, and the ``CheckContext`` a rule may read.

A ``Validation`` with a failed ``error``-severity result is blocking: the build raises
``ChecksFailed``, the output stays in staging and the previous version stays current.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.rules import Rule
from medallion_assets.lake import Lake

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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
        staging: str,
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
        lines = [f"{head}; {kept}; the rejected output is kept as {staging}"]
        lines += [
            f"  - {r.name} ({r.kind}): {r.message} ({r.failing_rows:,} failing rows)"
            for r in failures
        ]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class CheckContext:
    """What checks may read besides the staged frame. ``spark_of`` gives the Spark session,
    opened by the first check that reads (a reused version's checks mostly read nothing)."""

    spark_of: Callable[[], SparkSession]
    lake: Lake
    catalog: Catalog
    dataset: Dataset
    partition: str | None = None
    quarantine: DataFrame | None = None  # bronze: the staged quarantine records
    records_read: int | None = None  # bronze: records read from the raw objects
    quarantined: int | None = None  # bronze: the quarantine's records, when already counted
    now: float = field(default_factory=time.time)

    @property
    def spark(self) -> SparkSession:
        return self.spark_of()

    @functools.cached_property
    def pii_columns(self) -> frozenset[str]:
        """Masked in samples: the table's declared PII columns, those of the raw sources it
        reads, and every column of it a PII column upstream reaches by column lineage (a
        source's ``pii_columns`` protect the silver and gold columns they flow into)."""
        columns = set(self.catalog.lineage.pii_in(self.dataset.name))
        columns.update(self.dataset.pii_columns)
        for _name, source in self.catalog.raw_sources(self.dataset):
            columns.update(source.pii_columns)
        return frozenset(columns)


def sample_rows(
    frame: DataFrame, pii: frozenset[str], limit: int = SAMPLE_ROWS
) -> tuple[dict[str, Any], ...]:
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


class ResultExtras(TypedDict, total=False):
    """What a rule may add to its result besides the counts and message."""

    samples: tuple[dict[str, Any], ...]
    engine: str
    details: dict[str, Any]


def result_of(
    rule: Rule, passed: bool, failing: int, total: int, message: str, **kw: Unpack[ResultExtras]
) -> CheckResult:
    return CheckResult(
        name=rule.label(),
        kind=rule.kind,
        severity=rule.severity,
        passed=passed,
        failing_rows=failing,
        total_rows=total,
        message=message,
        **kw,
    )
