"""Table rules in Spark SQL: row_count, freshness, referential_integrity, sql, quarantine_rate,
and the warehouse reconciliation checked after a load. A table rule that fails counts every row
of the table as failing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import functions as F

from medallion_assets.catalog.rules import (
    SELF_PLACEHOLDER,
    FreshnessRule,
    QuarantineRateRule,
    ReconciliationRule,
    ReferentialIntegrityRule,
    RowCountRule,
    SqlAssertionRule,
)
from medallion_assets.checks.results import CheckContext, CheckResult, result_of, sample_rows
from medallion_assets.lineage.spark_sql import spark_query, view_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from medallion_assets.io.warehouse_load import LoadReport


def row_count(rule: RowCountRule, total: int) -> CheckResult:
    low = rule.min is not None and total < rule.min
    high = rule.max is not None and total > rule.max
    bounds = f"[{_bound(rule.min)}, {_bound(rule.max)}]"
    passed = not (low or high)
    message = f"{total:,} rows, {'within' if passed else 'outside'} {bounds}"
    return result_of(rule, passed, 0 if passed else total, total, message)


def _bound(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def freshness(
    rule: FreshnessRule, frame: DataFrame, total: int, context: CheckContext
) -> CheckResult:

    column = rule.timestamp_column
    if column not in frame.columns:
        return result_of(rule, False, total, total, f"column {column} missing from the table")
    row = frame.select(F.max(F.col(column).cast("timestamp")).cast("double")).first()
    return judge_freshness(rule, row[0] if row is not None else None, total, context.now)


def judge_freshness(
    rule: FreshnessRule, newest: float | None, total: int, now: float
) -> CheckResult:
    """The freshness result of a table whose newest timestamp is ``newest`` (epoch seconds)
    at ``now``: measured once per version, judged again at each run that reuses it."""
    column = rule.timestamp_column
    if newest is None:
        return result_of(rule, False, total, total, f"no {column} value: the table is empty")
    age = (now - newest) / 3600
    passed = age <= rule.max_age_hours
    message = (
        f"newest {column} is {age:,.1f} h old "
        f"({'within' if passed else 'over'} {rule.max_age_hours:g} h)"
    )
    details = {"newest_epoch": newest, "age_hours": round(age, 3)}
    return result_of(rule, passed, 0 if passed else total, total, message, details=details)


def referential_integrity(
    rule: ReferentialIntegrityRule, frame: DataFrame, total: int, context: CheckContext
) -> CheckResult:

    if rule.to_table == context.dataset.name:
        parent = frame
    else:
        current = context.lake.read_current(context.spark, rule.to_table)
        if current is None:
            message = f"{rule.to_table} has no published version to check against"
            return result_of(rule, False, total, total, message)
        parent = current
    keys = parent.select(
        [F.col(t).alias(c) for c, t in zip(rule.columns, rule.to_columns, strict=True)]
    ).distinct()
    present = F.lit(True)
    for c in rule.columns:
        present = present & F.col(c).isNotNull()
    orphans = frame.where(present).join(keys, list(rule.columns), "left_anti")
    failing = orphans.count()
    target = f"{rule.to_table}({', '.join(rule.to_columns)})"
    if failing == 0:
        return result_of(rule, True, 0, total, f"every ({', '.join(rule.columns)}) is in {target}")
    samples = sample_rows(orphans, context.pii_columns)
    message = (
        f"{failing:,} of {total:,} rows have ({', '.join(rule.columns)}) missing from {target}"
    )
    return result_of(rule, False, failing, total, message, samples=samples)


def sql_assertion(
    rule: SqlAssertionRule, frame: DataFrame, total: int, context: CheckContext
) -> CheckResult:

    checked = "medallion_checked__" + view_name(context.dataset.name)
    frame.createOrReplaceTempView(checked)
    views = {SELF_PLACEHOLDER: checked}
    for table in rule.referenced_tables():
        current = context.lake.read_current(context.spark, table)
        if current is None:
            return result_of(rule, False, total, total, f"{table} has no published version")
        current.createOrReplaceTempView(view_name(table))
        views[table] = view_name(table)
    _, query = spark_query(
        rule.query.replace("{table}", SELF_PLACEHOLDER), "spark", "check.assertion", views
    )
    failures = context.spark.sql(query)
    failing = failures.count()
    if failing == 0:
        return result_of(rule, True, 0, total, "the assertion query returned no rows")
    samples = sample_rows(failures, context.pii_columns)
    message = f"the assertion query returned {failing:,} failing row(s)"
    return result_of(
        rule, False, failing, total, message, samples=samples, details={"query": query}
    )


def quarantine_rate(rule: QuarantineRateRule, total: int, context: CheckContext) -> CheckResult:

    read = context.records_read if context.records_read is not None else total
    if context.quarantine is None:
        return result_of(rule, True, 0, read, "nothing ingested in this build: no quarantine")
    quarantined = context.quarantined
    if quarantined is None:
        quarantined = context.quarantine.count()
    rate = quarantined / read if read else 0.0
    passed = rate <= rule.max_fraction
    message = (
        f"{quarantined:,} of {read:,} records quarantined ({rate:.3%}; "
        f"{'within' if passed else 'over'} {rule.max_fraction:.3%})"
    )
    samples: tuple[dict[str, Any], ...] = ()
    if quarantined:
        # A malformed record is raw text: any PII in it cannot be told apart, so mask it whole
        # when the source has PII columns.
        shown = context.quarantine.select(
            F.substring(F.col(context.quarantine.columns[0]), 1, 200).alias("record"),
            "_source_file",
        )
        pii = frozenset({"record"}) if context.pii_columns else frozenset()
        samples = sample_rows(shown, pii)
    details = {"quarantined": quarantined, "records_read": read, "rate": round(rate, 6)}
    return result_of(rule, passed, quarantined, read, message, samples=samples, details=details)


def reconciliation_result(
    rule: ReconciliationRule,
    expected_rows: int,
    warehouse_rows: int,
    table: str,
    duplicate_keys: int = 0,
) -> CheckResult:
    """After a warehouse load: the rows the lake says the scope (the loaded partition, else the
    table) must hold (the lake version's rows; for an append without partitions, the rows before
    plus the rows appended) against a count of it; a key held twice fails whatever the counts."""
    difference = abs(expected_rows - warehouse_rows)
    passed = difference <= rule.tolerance and duplicate_keys == 0
    message = (
        f"{table}: {warehouse_rows:,} rows in the warehouse, {expected_rows:,} expected from "
        f"the lake (difference {difference:,}, tolerance {rule.tolerance:,})"
    )
    if duplicate_keys:
        message += f"; {duplicate_keys:,} key value(s) held by more than one row"
    return result_of(
        rule,
        passed,
        0 if passed else max(difference, duplicate_keys),
        expected_rows,
        message,
        details={
            "expected_rows": expected_rows,
            "warehouse_rows": warehouse_rows,
            "duplicate_keys": duplicate_keys,
        },
    )


def reconciliation_message(report: LoadReport) -> str:
    """Why a load did not reconcile, in the words of the check above."""
    where = f" of partition {report.partition}" if report.partition else ""
    text = (
        f"{report.rows_in_table:,} rows{where} in the warehouse, {report.expected_rows:,} "
        "expected from the lake"
    )
    if report.duplicate_keys:
        text += f"; {report.duplicate_keys:,} key value(s) held by more than one row"
    return text
