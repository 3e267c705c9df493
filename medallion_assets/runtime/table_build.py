"""Build one silver or gold table (or one daily partition of it) on Spark, then publish it.

The steps: resolve the published version of every upstream table; skip when the code and every
input are unchanged since the current version; otherwise register the upstream versions as
views, run the SQL, write to staging, validate, publish atomically.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.checks.results import CheckContext, ChecksFailed, Validation
from medallion_assets.checks.validation import (
    record_rejection,
    reused_validation,
    still_rejected,
    validate_frame,
)
from medallion_assets.lineage.statement import parse_statement
from medallion_assets.planner.diagnosis import headline
from medallion_assets.runtime.lake import Lake, TableVersion, staged_rows
from medallion_assets.runtime.merge import merge_errors, merge_frame
from medallion_assets.runtime.spark_sql import spark_script, view_name
from medallion_assets.runtime.table_run import TableRun

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class MissingInput(RuntimeError):
    """An upstream table has no published version yet (``table`` names it)."""

    def __init__(self, message: str, table: str = ""):
        super().__init__(message)
        self.table = table


class UnreadableInput(RuntimeError):
    """An upstream table's published files cannot be read; the message names the table and
    its folders, the cause says why (its class decides whether a retry can help)."""


@dataclass(frozen=True)
class BuildOutcome:
    version: TableVersion
    skipped: bool
    reason: str
    metadata: dict[str, Any] = field(default_factory=dict)
    validation: Validation = field(default_factory=Validation)


def input_versions(
    lake: Lake, catalog: Catalog, dataset: Dataset, partition: str | None
) -> dict[str, str]:
    """The version of every upstream table this build would read."""
    versions: dict[str, str] = {}
    for upstream in dataset.upstream:
        if upstream.startswith("raw."):
            continue  # only bronze reads raw; the ingest step tracks objects instead
        versions[upstream] = _upstream_version(lake, catalog, dataset, upstream, partition)
    return versions


def _upstream_version(
    lake: Lake, catalog: Catalog, dataset: Dataset, upstream: str, partition: str | None
) -> str:
    if lake.is_partitioned(upstream):
        keys = (
            [partition]
            if _same_partitions(catalog, dataset, upstream)
            else lake.partitions(upstream)
        )
        found = [(k, lake.current(upstream, k)) for k in keys if k is not None]
        missing = [k for k, v in found if v is None]
        if missing or not found:
            raise MissingInput(
                f"{upstream} has no published version for partition(s) "
                f"{', '.join(str(k) for k in missing) or '(none)'}: materialize it first",
                upstream,
            )
        joined = ",".join(f"{k}={v.version_id}" for k, v in found if v is not None)
        return hashlib.sha256(joined.encode()).hexdigest()[:16] if len(found) > 1 else joined
    current = lake.current(upstream)
    if current is None:
        raise MissingInput(f"{upstream} has no published version: materialize it first", upstream)
    return current.version_id


def _same_partitions(catalog: Catalog, dataset: Dataset, upstream: str) -> bool:
    """A daily dataset reading a daily upstream reads the same day (identity mapping)."""
    mine = dataset.settings.partitions
    theirs = (
        catalog.datasets[upstream].settings.partitions if upstream in catalog.datasets else None
    )
    return mine is not None and theirs is not None


def build_table(run: TableRun) -> BuildOutcome:
    """Build ``run``'s table (its day, when partitioned) and publish it, or reuse the current
    version when its code and inputs are unchanged."""
    spark, lake, catalog, dataset, partition = (
        run.session,
        run.lake,
        run.catalog,
        run.dataset,
        run.partition,
    )
    sources = input_versions(lake, catalog, dataset, partition)
    current = lake.current(dataset.name, partition)
    # From the SQL itself, not the catalog's kind: an alternate producer may be a plain SELECT.
    merge = parse_statement(dataset.sql, dataset.dialect, dataset.name).kind == "merge"
    # A MERGE reads its own current version too; it is recorded as an input, but a MERGE whose
    # code and sources are unchanged has nothing new to apply, so it does not count for skipping.
    inputs = {**sources, dataset.name: current.version_id if current else ""} if merge else sources
    own = dataset.name if merge else None
    reusable = lake.reusable(dataset.name, partition, dataset.code_version, sources, own)
    if reusable is not None:
        reason = (
            f"skipped {dataset.name}{_label(partition)}: code and inputs unchanged since "
            f"version {reusable.version_id}"
        )
        run.log.info(reason)
        return skipped(run, reusable, reason)
    if run.checks:
        blocked = still_rejected(
            run.check_ledger, lake, dataset.name, partition, dataset.code_version, inputs
        )
        if blocked is not None:
            run.log.info(str(blocked).splitlines()[0])
            raise blocked

    views = register_inputs(spark, lake, catalog, dataset, partition)
    if merge:
        frame, query = merge_frame(spark, lake, dataset, current, views)
    else:
        script = spark_script(dataset.sql, dataset.dialect, dataset.name, views)
        frame = script.run(spark)  # the preamble (temporary views, functions) first
        query = script.query
        if script.by_position and len(frame.columns) == len(dataset.column_names):
            frame = frame.toDF(*dataset.column_names)  # INSERT writes the table's columns in order
        if script.kind == "insert" and current is not None:
            # INSERT INTO appends: the new version is the current rows plus the query's rows.
            frame = lake.read(spark, [current]).unionByName(frame)
    with merge_errors(dataset):
        staged = Staged(*lake.stage_frame(frame, dataset.name, partition))
    version, validation = publish_checked(run, staged, inputs, checks=run.check_context())
    run.log.info(
        f"published {dataset.name}{_label(partition)} version {version.version_id}: "
        f"{version.rows} rows"
    )
    return BuildOutcome(
        version, False, "built", {"rows": version.rows, "spark_sql": query}, validation
    )


def skipped(run: TableRun, version: TableVersion, reason: str) -> BuildOutcome:
    """The outcome of a build that reuses ``version``, with its check results reported again."""
    context = run.check_context()
    validation = (
        reused_validation(version, context, run.check_ledger)
        if context is not None
        else Validation()
    )
    return BuildOutcome(version, True, reason, validation=validation)


@dataclass(frozen=True)
class Staged:
    """Output written to a staging folder, not yet published, and the frame reading it."""

    staging: Path
    frame: DataFrame


def publish_checked(
    run: TableRun,
    staged: Staged,
    inputs: dict[str, str],
    *,
    checks: CheckContext | None,
    extra: dict[str, Any] | None = None,
    before_publish: Callable[[], None] = lambda: None,
) -> tuple[TableVersion, Validation]:
    """Count and check the staged output, then publish it, or keep it in staging when a
    blocking check fails (``ChecksFailed``); any other failure discards it."""
    lake, dataset, partition, staging = run.lake, run.dataset, run.partition, staged.staging
    current = lake.current(dataset.name, partition)
    # The checks read the staged Parquet directly: each reads only the columns it needs, and
    # caching the frame first cost more than all the checks' reads together (bench F).
    validation = Validation()
    try:
        rows = staged_rows(staging)
        if checks is not None:
            validation = validate_frame(staged.frame, checks, total=rows)
            if validation.blocking_failures:
                raise ChecksFailed(
                    dataset.name,
                    partition,
                    validation,
                    staging,
                    current.version_id if current else None,
                )
        before_publish()
        version = lake.publish(
            staging,
            dataset.name,
            partition,
            dataset.code_version,
            inputs,
            rows,
            run.run_id,
            # The schema the next reads of this version take instead of inferring one (a job).
            {**(extra or {}), "schema": staged.frame.schema.json()},
        )
    except ChecksFailed as failed:
        record_rejection(run.check_ledger, failed, dataset.code_version, inputs, run.run_id)
        lake.keep_rejected(staging)
        raise
    except BaseException:
        lake.discard(staging)
        raise
    if run.check_ledger is not None and checks is not None:
        run.check_ledger.record(
            "published",
            dataset.name,
            partition,
            version.version_id,
            dataset.code_version,
            inputs,
            list(validation.as_json()),
            run.run_id,
        )
    return version, validation


def register_inputs(
    spark: SparkSession, lake: Lake, catalog: Catalog, dataset: Dataset, partition: str | None
) -> dict[str, str]:
    """Register each upstream table's published version as a temp view; returns table -> view."""
    views: dict[str, str] = {}
    for upstream in dataset.upstream:
        versions = _input_versions(lake, catalog, dataset, upstream, partition)
        if not versions:
            raise MissingInput(
                f"{upstream} has no published version: materialize it first", upstream
            )
        view = view_name(upstream)
        try:
            frame = lake.read(spark, versions)
        except Exception as error:  # Spark's text may not say which table or folder it read
            raise UnreadableInput(
                f"{upstream}: its published version at {lake.location(versions)} cannot be read: "
                f"{headline(error)}"
            ) from error
        frame.createOrReplaceTempView(view)
        views[upstream] = view
    return views


def _input_versions(
    lake: Lake, catalog: Catalog, dataset: Dataset, upstream: str, partition: str | None
) -> list[TableVersion]:
    if lake.is_partitioned(upstream) and _same_partitions(catalog, dataset, upstream):
        return lake.current_versions(upstream, [partition] if partition else None)
    return lake.current_versions(upstream)


def _label(partition: str | None) -> str:
    return f" [{partition}]" if partition else ""
