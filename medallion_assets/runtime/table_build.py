"""Build one silver or gold table (or one daily partition of it) on Spark, then publish it.

The steps: resolve the published version of every upstream table; skip when the code and every
input are unchanged since the current version; otherwise register the upstream versions as
views, run the SQL, stage the output as a snapshot on a branch of the table (a MERGE runs as
Iceberg's own on that branch), check exactly that snapshot, publish it in one catalog commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.kinds import HISTORY_COLUMNS
from medallion_assets.catalog.rules import UniqueRule
from medallion_assets.checks.results import CheckContext, ChecksFailed, Validation
from medallion_assets.checks.validation import (
    Change,
    data_rules,
    record_rejection,
    reused_validation,
    still_rejected,
    validate_change,
    validate_frame,
)
from medallion_assets.errors import headline
from medallion_assets.faults import crash_point
from medallion_assets.lake import Lake, Produced, StagedWrite, Version
from medallion_assets.lake.changes import Changes, appended_rows
from medallion_assets.lineage.shape import query_shape
from medallion_assets.lineage.spark_sql import spark_script, view_name
from medallion_assets.lineage.statement import parse_script
from medallion_assets.runtime.incremental import (
    Base,
    Increment,
    StagedIncrement,
    plan_increment,
    refuse_duplicate_keys,
    stage_increment,
)
from medallion_assets.runtime.merge import stage_merge
from medallion_assets.runtime.planning import plan_small
from medallion_assets.runtime.reuse import (
    MissingInput,
    input_versions,
    reused_build,
    same_partitions,
)
from medallion_assets.runtime.scd2 import history
from medallion_assets.runtime.spark_jobs import beside
from medallion_assets.runtime.sql_errors import run_traced
from medallion_assets.runtime.table_run import CheckInputsNotPublished, TableRun

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class UnreadableInput(RuntimeError):
    """An upstream table's published files cannot be read; the message names the table and
    its folders, the cause says why (its class decides whether a retry can help)."""


# What an append or merge table's build adds to its materialization: how it was built (in full,
# and why, or from its driving input's changes) and the rows the increment wrote.
INCREMENT_KEYS = ("built", "rows_written")


@dataclass(frozen=True)
class BuildOutcome:
    version: Version
    skipped: bool
    reason: str
    metadata: dict[str, Any] = field(default_factory=dict)
    validation: Validation = field(default_factory=Validation)
    change: Change | None = None  # an incremental MERGE's, over the version it started from


def build_table(run: TableRun) -> BuildOutcome:
    """Build ``run``'s table (its day, when partitioned) and publish it, or reuse the current
    version when its code and inputs are unchanged."""
    lake, catalog, dataset, partition = run.lake, run.catalog, run.dataset, run.partition
    sources = input_versions(lake, catalog, dataset, partition)
    drop_stale_staging(run)
    current = lake.current(dataset.name, partition)
    # Parsed once for the build. The kind from the SQL itself, not the catalog's: an alternate
    # producer may be a plain SELECT.
    parsed = parse_script(dataset.sql, dataset.dialect, dataset.name, inline=False)
    merge = parsed[1].kind == "merge"
    # A MERGE reads its own current version too; it is recorded as an input, but a MERGE whose
    # code and sources are unchanged has nothing new to apply, so it does not count for skipping.
    inputs = {**sources, dataset.name: current.version_id if current else ""} if merge else sources
    reusable = reused_build(run, sources, merge)
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

    spark = run.session  # opened here: a reused version needs no Spark
    views = register_inputs(spark, lake, catalog, dataset, partition)
    shape = query_shape(parsed[1]).as_json()
    produced = Produced(dataset.code_version, inputs, run.run_id, shape=shape)
    plan = dataset.incremental if partition is None and not merge else None
    increment = plan_increment(run, plan, sources, current) if plan is not None else None
    done: StagedIncrement | None = None
    if plan is not None and increment is not None and increment.changes is not None:
        assert current is not None, f"{dataset.name}: changes are read since its version"
        _planned(run, plan_small(spark, lake, [*sources, dataset.name], increment=True))
        staging = stage_increment(run, plan, increment, Base(current, views), produced, parsed)
        if isinstance(staging, str):  # its output changed shape: in full after all
            increment = Increment(full_because=staging)
        else:
            done = staging
    metadata: dict[str, Any] = {}
    if increment is not None and increment.full_because:
        metadata["built"] = f"in full: {increment.full_because}"
        run.log.info(f"{dataset.name} (kind {dataset.settings.kind}) built {metadata['built']}")
    if done is not None:
        staged, query = done.staged, done.query
        metadata.update(built=done.how, rows_written=done.rows)
        run.log.info(f"{dataset.name} (kind {dataset.settings.kind}): {done.how}")
    elif merge:
        staged, query = stage_merge(run, views, produced, parsed)
    else:
        _planned(run, plan_small(spark, lake, sources, increment=False))
        script = spark_script(dataset.sql, dataset.dialect, dataset.name, views, parsed)
        # the preamble (temporary views, functions) first; an analysis error names the file
        frame = run_traced(script, spark, dataset.sql_path, dataset.sql)
        query = script.query
        if script.by_position and len(frame.columns) == len(dataset.column_names):
            frame = frame.toDF(*dataset.column_names)  # INSERT writes the table's columns in order
        if dataset.settings.kind == "scd2":  # the versions made now beside those it holds
            frame = history(dataset, frame, held_history(run, current))
        # INSERT INTO appends: the new version is the current rows plus the query's rows.
        mode: Literal["replace", "append"] = "append" if script.kind == "insert" else "replace"
        staged = stage_output(run, frame, produced, mode)
    checks, change = run.check_context(), done.change if done is not None else None
    # A MERGE's recomputed rows were refused duplicates before it ran; a build in full here.
    unique = _unique_keys(run, staged, checks) if done is None else lambda: None
    version, validation = publish_checked(
        run, staged, produced, checks=checks, change=change, before_publish=unique
    )
    run.log.info(
        f"published {dataset.name}{_label(partition)} version {version.version_id}: "
        f"{version.rows} rows"
    )
    metadata.update(rows=version.rows, spark_sql=query)
    return BuildOutcome(version, False, "built", metadata, validation, change)


def _planned(run: TableRun, planned: Mapping[str, str]) -> None:
    """Say a static plan in the run's log: it holds for the rest of the step (its MERGE,
    checks and warehouse load)."""
    if planned:
        parts = planned["spark.sql.shuffle.partitions"]
        run.log.info(f"{run.dataset.name}: small files, planned statically ({parts} partitions)")


def _unique_keys(
    run: TableRun, staged: StagedWrite, checks: CheckContext | None
) -> Callable[[], None]:
    """What a ``merge`` table's build in full (its first, a refresh, a fallback) checks before
    it is published: no key held by two rows of the staged table, read back from the staged
    snapshot, so no later MERGE meets a key twice (it would update both rows alike). Nothing
    when the checks judge a blocking ``unique`` rule on exactly the keys: it has read the same
    rows, and a duplicate blocked the write before it could be published."""
    dataset = run.dataset
    keys = list(dataset.settings.keys)
    if dataset.settings.kind != "merge" or not keys:
        return lambda: None
    named = {k.lower() for k in keys}
    judged = [r for r in data_rules(dataset) if isinstance(r, UniqueRule) and r.blocking]
    if checks is not None and any({c.lower() for c in r.columns} == named for r in judged):
        return lambda: None
    return lambda: refuse_duplicate_keys(run, staged.frame, keys)


def held_history(run: TableRun, current: Version | None) -> DataFrame | None:
    """The versions an scd2 table holds (None before its first build, or when it was built
    as another kind): a full build keeps them, as its input may no longer hold them."""
    if current is None:
        return None
    rows = run.lake.read(run.session, [current])
    if not set(HISTORY_COLUMNS) <= {c.lower() for c in rows.columns}:
        return None
    return rows


def drop_stale_staging(run: TableRun) -> None:
    """Drop what killed builds of the table left staged (its build lock is held: no other
    build of it stages now), and say so."""
    dropped = run.lake.drop_stale_staging(run.dataset.name)
    if dropped:
        run.log.info(
            f"dropped {dropped} staging branch(es) of {run.dataset.name} that killed builds left"
        )


def stage_output(
    run: TableRun,
    frame: DataFrame,
    produced: Produced,
    mode: Literal["replace", "append"] = "replace",
    table: str | None = None,
    column: str | None = None,
) -> StagedWrite:
    """Stage ``frame`` as the run's table (or ``table``, e.g. its quarantine, whose day is in
    ``column``): the whole table, or the run's day of a daily one."""
    partitions = run.dataset.settings.partitions
    if run.partition is None:
        column = None
    elif column is None and partitions is not None:
        column = partitions.column
    return run.lake.stage(
        run.session,
        frame,
        table or run.dataset.name,
        produced,
        partition=run.partition,
        partition_column=column,
        mode=mode,
    )


def skipped(run: TableRun, version: Version, reason: str) -> BuildOutcome:
    """The outcome of a build that reuses ``version``, with its check results reported again."""
    context = run.check_context()
    validation = (
        reused_validation(version, context, run.check_ledger)
        if context is not None
        else Validation()
    )
    return BuildOutcome(version, True, reason, validation=validation)


def publish_checked(
    run: TableRun,
    staged: StagedWrite,
    produced: Produced,
    *,
    checks: CheckContext | None,
    before_publish: Callable[[], None] = lambda: None,
    change: Change | None = None,
) -> tuple[Version, Validation]:
    """Check exactly the staged snapshot (``change``: a MERGE's recomputed rows, or an append's
    rows found here, which may decide rules the kept rows passed: ``validate_change``), then
    publish it; when a blocking check fails it is kept under a tag (``ChecksFailed``), and any
    other failure drops it. Either way the table's current version does not move."""
    lake, dataset, partition, spark = run.lake, run.dataset, run.partition, run.session
    current = lake.current(dataset.name, partition)
    # The checks read the staged snapshot directly: each reads only the columns it needs.
    validation = Validation()
    try:
        if checks is not None and run.check_inputs is not None:
            missing = run.check_inputs()  # the tables the checks read, as the run leaves them
            if missing:
                raise CheckInputsNotPublished(run.label, missing, current is not None)
        if checks is not None:
            change = change or _appended(run, staged, current)
            validation = (
                validate_change(
                    staged.frame,
                    checks,
                    staged.rows,
                    change,
                    run.check_ledger,
                    lambda work: beside(spark, work),
                )
                if change is not None
                else validate_frame(staged.frame, checks, total=staged.rows)
            )
        if validation.blocking_failures:
            kept = lake.keep_rejected(spark, staged)
        else:
            before_publish()
            crash_point("lake.staged", dataset.name, partition)
            version = lake.publish(spark, staged)
    except BaseException:
        _discard(lake, spark, staged)
        raise
    if validation.blocking_failures:
        failed = ChecksFailed(
            dataset.name, partition, validation, kept, current.version_id if current else None
        )
        record_rejection(
            run.check_ledger, failed, dataset.code_version, dict(produced.inputs), run.run_id
        )
        raise failed
    if run.check_ledger is not None and checks is not None:
        run.check_ledger.record(
            "published",
            dataset.name,
            partition,
            version.version_id,
            dataset.code_version,
            dict(produced.inputs),
            list(validation.as_json()),
            run.run_id,
        )
    return version, validation


def _appended(run: TableRun, staged: StagedWrite, current: Version | None) -> Change | None:
    """A staged write that only appended rows to the version in force (an ingest's batch, an
    append table's increment, an INSERT INTO): its rows read back from the staged snapshot,
    the rows its checks may judge alone (``validate_change``). None for any other write."""
    write = staged.write
    if current is None or write.partition is not None or write.operation != "append":
        return None
    if write.parent_id is None or str(write.parent_id) != current.version_id:
        return None  # staged on another snapshot than the version's own
    snapshots = ((write.snapshot_id, write.operation),)
    changes = Changes(write.table, write.parent_id, write.snapshot_id, snapshots)
    # Read once, by the first check that reads them, for every rule judged on them: each
    # rule's query would otherwise plan and read the staged snapshot's new files again.
    return Change(appended_rows(run.session, changes).localCheckpoint(eager=False), current)


def _discard(lake: Lake, spark: SparkSession, staged: StagedWrite) -> None:
    """Drop a staged write that will not be published; a failure to drop it (the catalog went
    away) does not hide the failure that stopped the build (``clear_staging`` drops it later)."""
    try:
        lake.discard(spark, staged)
    except Exception:  # the original error is the one to report
        return


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
) -> list[Version]:
    if lake.is_partitioned(upstream) and same_partitions(catalog, dataset, upstream):
        return lake.current_versions(upstream, [partition] if partition else None)
    return lake.current_versions(upstream)


def _label(partition: str | None) -> str:
    return f" [{partition}]" if partition else ""
