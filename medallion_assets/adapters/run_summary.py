"""What a headless run did, table by table, read from its Dagster events.

Each (table, partition) of a run ends in one status:

- ``built``: a new version was published (its rows are the rows this run wrote);
- ``unchanged``: code and inputs were unchanged, the current version was kept;
- ``blocked``: a blocking check kept the output from publishing (``since`` is set when an
  earlier run's rejection still holds and nothing was rebuilt);
- ``failed``: the step failed for any other reason;
- ``not run``: Dagster skipped the step because something it depends on did not publish;
- ``disabled``: the kill switch skipped it;
- ``busy``: another run was building it for longer than the step would wait (its build lock).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from medallion_assets.adapters.translator import step_table
from medallion_assets.errors import summary_line

# A step failure's metadata: whether another attempt may succeed (False for a permanent error or
# no route left; a blocked table, the checks' own failure, is never worth another attempt).
RETRYABLE = "retryable"

STATUSES = (
    "built",
    "unchanged",
    "not built",
    "blocked",
    "failed",
    "not run",
    "disabled",
    "busy",
)
# A step's materialization that built nothing because no available path produces its table
# (its source down, no replica or alternate left): ``unavailable`` says why, ``published``
# whether an earlier version stays current. Never "unchanged": nothing proved it unchanged.
UNAVAILABLE, PUBLISHED = "unavailable", "published"
# A step failure's metadata: the step published nothing because a table its checks read did
# not publish in the run (it was started beside that table's step: ``check_inputs.py``); it
# is reported as Dagster's own skip of a step whose upstream failed is: ``not run``.
NOT_RUN = "medallion/not_run"


def materialized_status(metadata: Mapping[str, Any]) -> str:
    """built, unchanged (skip-unchanged kept the current version) or not built (unavailable).

    >>> materialized_status({"skipped": True, "unavailable": "source:x is down"})
    'not built'
    """
    if metadata.get(UNAVAILABLE):
        return "not built"
    return "unchanged" if metadata.get("skipped") else "built"


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    severity: str  # "error" blocks publishing, "warn" reports
    passed: bool
    failing_rows: int
    message: str
    sample: dict[str, Any] | None = None  # the first failing row, PII masked


@dataclass
class TableResult:
    table: str
    partition: str | None
    status: str
    rows: int = 0  # rows this run wrote: a built version's rows, else 0
    current_rows: int | None = None  # rows of the version in force after the run
    quarantined: int | None = None
    warehouse_rows: int | None = None
    warehouse_loaded: str | None = None  # "loaded" or "unchanged"
    checks: list[CheckOutcome] = field(default_factory=list)
    message: str = ""  # why it was blocked, failed or not run
    seconds: float | None = None
    retryable: bool = True  # failed: another attempt may succeed (not a permanent error)
    set_aside: list[tuple[str, str]] = field(default_factory=list)  # raw (key, why) not read
    copies: list[tuple[str, str]] = field(default_factory=list)  # raw (key, what it copies)
    built: str = ""  # an append or merge table's build: from its changes, or in full and why

    @property
    def label(self) -> str:
        return f"{self.table}[{self.partition}]" if self.partition else self.table

    published: bool = True  # not built: whether an earlier version stays current

    @property
    def skipped(self) -> bool:
        """Nothing was rebuilt: the current version was kept."""
        return self.status == "unchanged"

    @property
    def checks_passed(self) -> int:
        return sum(c.passed for c in self.checks)

    @property
    def checks_failed(self) -> int:
        return sum(not c.passed for c in self.checks)


@dataclass
class RunSummary:
    results: list[TableResult] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    seconds: float = 0.0
    waited: list[str] = field(default_factory=list)  # for another run building a table

    def having(self, *statuses: str) -> list[TableResult]:
        return [r for r in self.results if r.status in statuses]

    @property
    def success(self) -> bool:
        return not self.having("failed", "blocked")

    @property
    def only_blocked(self) -> bool:
        """Every failure was a blocking check doing its job (nothing else went wrong)."""
        return bool(self.having("blocked")) and not self.having("failed")

    @property
    def rows_written(self) -> int:
        return sum(r.rows for r in self.results)

    @property
    def missing(self) -> list[TableResult]:
        """Tables not built that have no version: asked for, and not there after the run."""
        return [r for r in self.having("not built") if not r.published]

    @property
    def nothing_changed(self) -> bool:
        return not self.having("built", "failed", "not built") and not any(
            r.warehouse_loaded == "loaded" for r in self.results
        )

    @property
    def disabled(self) -> dict[str, str]:
        return {r.table: r.message for r in self.having("disabled")}

    @property
    def warnings(self) -> list[tuple[TableResult, CheckOutcome]]:
        """Warn-level checks that failed (they report and publish)."""
        return [
            (r, c) for r in self.results for c in r.checks if not c.passed and c.severity == "warn"
        ]


def results_of_run(
    result: Any,
    tables: Iterable[str],
    partition: str | None,
    skips: Mapping[str, str],
    busy: Mapping[str, str] | None = None,
) -> list[TableResult]:
    """One ``TableResult`` per table the ``execute_in_process`` run selected; ``skips`` are the
    tables the kill switch skipped in it, ``busy`` those another run was building (table ->
    why). A table whose step never started (Dagster does not execute a step whose upstream
    step failed) is ``not run``."""
    passed_over = {t: ("disabled", m) for t, m in skips.items()}
    passed_over.update({t: ("busy", m) for t, m in (busy or {}).items()})
    by_table: dict[str, TableResult] = {}

    def row(table: str, status: str) -> TableResult:
        if table not in by_table:
            by_table[table] = TableResult(table, partition, status)
        return by_table[table]

    for event in result.all_events:
        kind, table = event.event_type_value, step_table(event.step_key)
        if kind == "ASSET_MATERIALIZATION":
            materialization = event.step_materialization_data.materialization
            _materialized(row(".".join(materialization.asset_key.path), "built"), materialization)
        elif kind == "ASSET_CHECK_EVALUATION":
            evaluation = event.event_specific_data
            _checked(row(".".join(evaluation.asset_key.path), "built"), evaluation)
        elif kind == "STEP_SUCCESS" and event.step_key:
            status, message = passed_over.get(table, ("built", ""))
            current = row(table, status)
            current.seconds = event.event_specific_data.duration_ms / 1000
            current.message = message or current.message
        elif kind == "STEP_FAILURE" and event.step_key:
            _failed(row(table, "failed"), event)
        elif kind == "STEP_SKIPPED" and event.step_key:
            row(table, "not run")
    for table in tables:
        if row(table, "not run").status == "not run" and not by_table[table].message:
            by_table[table].message = "not run: an upstream table did not publish"
    return list(by_table.values())


def _materialized(row: TableResult, materialization: Any) -> None:
    meta = {k: v.value for k, v in materialization.metadata.items()}
    skipped = bool(meta.get("skipped", False))
    row.status = materialized_status(meta)
    if row.status == "not built":
        row.message = str(meta[UNAVAILABLE])
        row.published = bool(meta.get(PUBLISHED, True))
    row.current_rows = int(meta.get("rows", 0))
    # A bronze append wrote only its new rows (``rows_written``); a rebuild, all of them.
    row.rows = 0 if skipped else int(meta.get("rows_written", row.current_rows))
    row.built = str(meta.get("built", ""))
    row.quarantined = meta.get("quarantined_rows")
    row.warehouse_rows = meta.get("warehouse_rows")
    row.warehouse_loaded = meta.get("warehouse_loaded")
    for entry in meta.get("quarantined_object_keys") or []:
        if isinstance(entry, dict):
            row.set_aside.append((str(entry.get("key", "")), str(entry.get("reason", ""))))
    for entry in meta.get("duplicate_object_keys") or []:
        if isinstance(entry, dict):
            row.copies.append((str(entry.get("key", "")), str(entry.get("same_as", ""))))


def _checked(row: TableResult, evaluation: Any) -> None:
    meta = {k: v.value for k, v in evaluation.metadata.items()}
    samples = meta.get("sample_failing_rows") or []
    row.checks.append(
        CheckOutcome(
            evaluation.check_name,
            "error" if evaluation.severity == dg.AssetCheckSeverity.ERROR else "warn",
            evaluation.passed,
            int(meta.get("failing_rows", 0) or 0),
            str(meta.get("message", "")),
            samples[0] if samples and isinstance(samples[0], dict) else None,
        )
    )


def _failed(row: TableResult, event: Any) -> None:
    data = event.step_failure_data
    row.status, text = failure_outcome(data)
    row.message = text if row.status == "blocked" else first_line(text, 2000)
    user = data.user_failure_data
    retryable = user.metadata.get(RETRYABLE) if user is not None else None
    row.retryable = row.status != "blocked" and (retryable is None or bool(retryable.value))


def failure_outcome(data: Any) -> tuple[str, str]:
    """("blocked", the block's report) when blocking checks kept the output from publishing
    (the factory's failure carries the rejected staging folder), else ("failed", the reason)."""
    user = data.user_failure_data
    if user is not None and "rejected_staging" in user.metadata:
        return "blocked", user.description or ""
    if user is not None and NOT_RUN in user.metadata:
        return "not run", user.description or ""
    return "failed", (user.description if user is not None else None) or _root_message(data.error)


def _root_message(error: Any) -> str:
    """The innermost cause's message: what went wrong, not how Dagster wrapped it."""
    while error is not None and error.cause is not None:
        error = error.cause
    return "" if error is None else f"{error.cls_name}: {error.message}"


def first_line(text: str, limit: int = 600) -> str:
    """The line of an error's text worth showing (a Java trace's root cause, not its first
    line: see ``errors.summary_line``), at most ``limit`` characters, cut between
    words.

    >>> first_line("a path /lake/silver/t/data is not a folder", 30)
    'a path /lake/silver/t/data …'
    """
    line = summary_line(text or "")
    if len(line) <= limit:
        return line
    cut = line[: limit - 2]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " …"


def counts(results: Iterable[TableResult]) -> dict[str, int]:
    found = {status: 0 for status in STATUSES}
    for result in results:
        found[result.status] += 1
    return found
