"""What Spark does with a lake table: stage a write on a branch, read exactly what was staged,
publish it in one catalog commit or keep it back, roll back, expire old snapshots.

Write-audit-publish on Iceberg branches: every write goes to a fresh branch made from the
table's ``main``, so readers of ``main`` never see it; the checks read the staged snapshot; the
publish is one commit that moves ``main``. The staged snapshot's summary carries what produced
it (``medallion.*``: run, code version, inputs, partition, rows), written with the data.

Publishing a staged snapshot whose parent is still ``main``'s head fast-forwards ``main`` to it
(the published snapshot *is* the staged one, summary and all). When ``main`` moved meanwhile (a
daily table's other days published by steps beside this one), a day's overwrite or an append is
cherry-picked onto the new head: Iceberg re-applies it and refuses it if the same day changed
since (a real conflict). The copy's summary names its source (``source-snapshot-id``), and a
tag per day (``medallion_day_<day>``) keeps the staged snapshot, and so its summary, from expiry.
Any other write (a MERGE's rewrite) can only fast-forward; a moved ``main`` is a
``CommitConflict`` for the caller to retry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from medallion_assets.errors import ResourceError, said
from medallion_assets.lake.catalog import SPARK_CATALOG

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SUMMARY_PREFIX = "medallion."
DAY_TAG = "medallion_day_"
REJECTED_TAG = "medallion_rejected_"
STAGE_BRANCH = "medallion_stage_"
Mode = Literal["replace", "append"]


class Refs(Protocol):
    """The branches and tags the writes here move (``lake/refs.py``'s ``Refs`` commits them
    through the lake's catalog)."""

    def branch(self, table: str, base: str = "main") -> tuple[str, int | None]: ...

    def head(self, table: str, ref: str = "main") -> int | None: ...

    def staged(
        self,
        table: str,
        branch: str,
        parent: int | None,
        partition: str | None,
        partition_column: str | None = None,
    ) -> Staged: ...

    def fast_forward(
        self, table: str, branch: str, parent: int | None, tag: str | None = None
    ) -> int | None: ...

    def drop_branch(self, table: str, name: str) -> None: ...

    def tag(self, table: str, name: str, snapshot_id: int) -> None: ...

    def partition_by(self, table: str, column: str) -> None: ...


class CommitConflict(ResourceError):
    """Another writer changed the table between this write and its publish."""


@dataclass(frozen=True)
class Staged:
    """One write on its own branch, not yet published."""

    table: str  # layer.name
    branch: str
    snapshot_id: int
    parent_id: int | None  # main's head when the branch was made
    partition: str | None
    operation: str  # Iceberg's: append, overwrite, delete, replace
    rows: int  # the version's rows (of its day, for a daily write)
    changed_partitions: int  # the days the write changed (a daily write: its own, or none)
    partition_column: str | None = None  # a daily write's: its day is read from the snapshot
    # The branch publishing moves (an environment's, else main) and its head when staged.
    target: str = "main"
    target_head: int | None = None


def identifier(table: str, ref: str | None = None) -> str:
    """The Spark identifier of ``layer.name`` in the lake (of one of its branches).

    >>> identifier("silver.orders"), identifier("silver.orders", "medallion_stage_1a")
    ('lake.`silver`.`orders`', 'lake.`silver`.`orders`.`branch_medallion_stage_1a`')
    """
    layer, name = table.split(".", 1)
    base = f"{SPARK_CATALOG}.`{layer}`.`{name}`"
    return f"{base}.`branch_{ref}`" if ref else base


def day_tag(partition: str) -> str:
    """The tag holding a day's published version: ``medallion_day_2026_01_02``."""
    return DAY_TAG + re.sub(r"[^0-9A-Za-z]", "_", partition)


def summary_options(properties: Mapping[str, str]) -> dict[str, str]:
    """Writer options that put ``properties`` into the snapshot summary as ``medallion.*``."""
    return {f"snapshot-property.{SUMMARY_PREFIX}{k}": v for k, v in properties.items()}


def exists(spark: SparkSession, table: str) -> bool:
    return bool(spark.catalog.tableExists(identifier(table)))


def ensure_table(
    spark: SparkSession,
    table: str,
    frame: DataFrame,
    partition_column: str | None,
    refs: Refs,
) -> None:
    """Create the table with ``frame``'s schema when it does not exist (an empty first
    snapshot, so branches can be made from ``main``), partitioned by day when it is daily.

    The partition field is added once the table exists, in a commit of its own, and every
    caller makes sure of it before writing: a day written to a table not yet partitioned by
    it would replace the whole table. (Created partitioned in one request, some REST
    catalogs, SeaweedFS 4.48's, refuse a table partitioned on its first column.)"""
    if not exists(spark, table):
        _create(spark, table, frame)
    if partition_column is not None:
        refs.partition_by(table, partition_column)


def _create(spark: SparkSession, table: str, frame: DataFrame) -> None:
    layer = table.split(".", 1)[0]
    try:
        spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {SPARK_CATALOG}.`{layer}`")
    except Exception:  # another step created it between the check and the insert
        if not spark.catalog.databaseExists(f"{SPARK_CATALOG}.`{layer}`"):
            raise
    writer = frame.limit(0).writeTo(identifier(table)).using("iceberg")
    writer = writer.tableProperty("format-version", "2")
    # MERGE, UPDATE and DELETE write delete files for the rows they change instead of
    # rewriting every data file holding one (copy-on-write): their cost follows the change.
    for operation in ("merge", "update", "delete"):
        writer = writer.tableProperty(f"write.{operation}.mode", "merge-on-read")
    try:
        writer.create()
    except Exception as error:  # another writer created it first: use theirs
        if not exists(spark, table):
            raise
        del error


def stage(
    spark: SparkSession,
    frame: DataFrame,
    table: str,
    *,
    refs: Refs,
    mode: Mode,
    partition: str | None = None,
    partition_column: str | None = None,
    properties: Mapping[str, str] | None = None,
    base: str = "main",
    keep_schema: bool = False,
) -> Staged:
    """Write ``frame`` to a new branch of ``table`` made from ref ``base``: ``replace``
    overwrites the table (a daily table: only the days in ``frame``), ``append`` adds its rows.
    ``properties`` go into the snapshot's summary as ``medallion.<key>``. ``keep_schema``: no
    column dropped or retyped (an environment's write; columns are only added)."""
    ensure_table(spark, table, frame, partition_column, refs)
    whole = mode == "replace" and partition_column is None and not keep_schema
    frame = evolve(spark, table, frame, whole=whole)
    branch, head = refs.branch(table, base)
    writer = frame.writeTo(identifier(table, branch))
    for key, value in summary_options(properties or {}).items():
        writer = writer.option(key, value)
    if partition is not None:
        # One day's rows: each task writes its own (Iceberg's default for a partitioned table
        # first shuffles every row of a day into one task, so one core writes the whole day).
        # Fan-out, so rows of other days that slipped in still write (and are then refused
        # by the caller, naming them) rather than failing the clustered writer.
        writer = writer.option("distribution-mode", "none").option("fanout-enabled", "true")
    try:
        if mode == "append":
            writer.append()
        elif partition_column is None:
            # pyspark: loaded only where Spark runs (the CLI reads the lake without it)
            from pyspark.sql import functions as F

            writer.overwrite(F.lit(True))  # every row goes, even when the write has none
        else:
            writer.overwritePartitions()  # the days the rows are in
        if refs.head(table, branch) == head:  # nothing committed (no rows)
            stamp(spark, table, branch, properties or {})
    except BaseException:
        refs.drop_branch(table, branch)
        raise
    return refs.staged(table, branch, head, partition, partition_column)


def stage_sql(
    spark: SparkSession,
    table: str,
    statement: str,
    properties: Mapping[str, str] | None = None,
    *,
    refs: Refs,
    base: str = "main",
) -> Staged:
    """Run ``statement`` (a MERGE or UPDATE whose target is written ``{target}``) against a
    new branch of ``table`` made from ref ``base``: the staged write of a statement Iceberg
    runs itself, its snapshot's summary carrying ``properties`` (``sql_write``)."""
    branch, head = refs.branch(table, base)
    try:
        sql_write(spark, statement.replace("{target}", identifier(table, branch)), properties)
        staged = refs.staged(table, branch, head, None)
        if staged.snapshot_id == head:  # no snapshot (Iceberg 1.12 commits an empty MERGE)
            stamp(spark, table, branch, properties or {})
            staged = refs.staged(table, branch, head, None)
    except BaseException:
        refs.drop_branch(table, branch)
        raise
    return staged


def sql_write(spark: SparkSession, statement: str, properties: Mapping[str, str] | None) -> None:
    """Run the SQL write ``statement`` with ``properties`` in its snapshot's summary: SQL has no
    write options, so through Iceberg's session settings ``spark.sql.iceberg.snapshot-property.*``
    on ``spark`` (a step's own session) for the statement alone. Row-level writes (MERGE,
    UPDATE) read them; a DELETE that drops whole files commits without them."""
    settings = {f"spark.sql.iceberg.{k}": v for k, v in summary_options(properties or {}).items()}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        spark.sql(statement)
    finally:
        for key in settings:
            spark.conf.unset(key)


def stamp(spark: SparkSession, table: str, branch: str, properties: Mapping[str, str]) -> None:
    """Commit an empty append to ``branch`` whose summary carries ``properties``: after a
    write that committed no snapshot of its own."""
    writer = spark.table(identifier(table)).limit(0).writeTo(identifier(table, branch))
    for key, value in summary_options(properties).items():
        writer = writer.option(key, value)
    writer.append()


def empty_day(
    spark: SparkSession,
    staged: Staged,
    column: str,
    properties: Mapping[str, str],
    refs: Refs,
) -> Staged:
    """A day's overwrite that wrote no rows replaced nothing (Iceberg replaces the days the
    rows are in): delete the day's rows on the branch, so the day's new version is empty."""
    target = identifier(staged.table, staged.branch)
    spark.sql(f"DELETE FROM {target} WHERE `{column}` = '{staged.partition}'")
    # A DELETE of whole files commits without the session's summary settings (``sql_write``)
    stamp(spark, staged.table, staged.branch, properties)
    return refs.staged(staged.table, staged.branch, staged.parent_id, staged.partition, column)


def evolve(spark: SparkSession, table: str, frame: DataFrame, whole: bool = False) -> DataFrame:
    """``frame`` lined up with the table by name: columns it adds are added to the table's
    schema first (one schema change, existing rows read them as NULL); columns it lacks are
    written as NULL. A write of the ``whole`` table drops the columns it lacks and may change
    a column's type: widened in place where Iceberg can (int to bigint, float to double), else
    the column is replaced. Older snapshots keep reading their own schema; readers of ``main``
    see the new schema from here on, before the write is published (a schema change is not
    staged on a branch in Iceberg). Not ``write.spark.accept-any-schema``: with it
    Spark leaves MERGE to Iceberg's SQL extensions, which this session does without."""
    # pyspark: loaded only where Spark runs (the CLI reads the lake without it)
    from pyspark.sql import functions as F

    current = spark.table(identifier(table)).schema
    have = {f.name.lower(): f for f in current.fields}
    added = [f for f in frame.schema.fields if f.name.lower() not in have]
    if whole:
        for f in frame.schema.fields:
            old = have.get(f.name.lower())
            if old is None or _same_type(old.dataType, f.dataType):
                continue
            kind = f.dataType.simpleString()
            try:
                spark.sql(f"ALTER TABLE {identifier(table)} ALTER COLUMN `{old.name}` TYPE {kind}")
            except Exception:  # not a widening Iceberg allows: a new column of that name
                spark.sql(f"ALTER TABLE {identifier(table)} DROP COLUMN `{old.name}`")
                added.append(f)
    if added:
        columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in added)
        spark.sql(f"ALTER TABLE {identifier(table)} ADD COLUMNS ({columns})")
        current = spark.table(identifier(table)).schema
    given = {f.name.lower() for f in frame.schema.fields}
    missing = [f for f in current.fields if f.name.lower() not in given]
    if whole and missing:  # a rewrite of every row: a column it no longer has goes
        for f in missing:
            spark.sql(f"ALTER TABLE {identifier(table)} DROP COLUMN `{f.name}`")
        missing = []
    for f in missing:
        frame = frame.withColumn(f.name, F.lit(None).cast(f.dataType))
    return frame


def _same_type(a: Any, b: Any) -> bool:
    """Equal types, nullability aside (Spark reads every Iceberg column as nullable)."""
    return bool(a.simpleString() == b.simpleString())


def read_staged(spark: SparkSession, staged: Staged) -> DataFrame:
    """Exactly the staged snapshot (a daily write: only its day)."""
    frame = spark.read.option("versionAsOf", str(staged.snapshot_id)).table(
        identifier(staged.table)
    )
    if staged.partition is not None and staged.partition_column is not None:
        # pyspark: loaded only where Spark runs (the CLI reads the lake without it)
        from pyspark.sql import functions as F

        frame = frame.where(F.col(f"`{staged.partition_column}`") == F.lit(staged.partition))
    return frame


def publish(spark: SparkSession, staged: Staged, refs: Refs) -> int:
    """Make the staged write current; returns ``main``'s new head. When ``main`` is where the
    write was staged from: one catalog commit moves it, tags the day and drops the branch;
    else the write is cherry-picked onto ``main`` (one commit), then tagged, branch dropped."""
    name = staged.table
    tag = day_tag(staged.partition) if staged.partition is not None else None
    if (moved := refs.fast_forward(name, staged.branch, staged.parent_id, tag)) is not None:
        return moved
    if staged.operation in ("append", "overwrite") and _rebasable(spark, staged):
        try:
            picked = spark.sql(
                f"CALL {SPARK_CATALOG}.system.cherrypick_snapshot('{qualified(name)}', "
                f"{staged.snapshot_id})"
            ).collect()  # (source snapshot, new head)
            head = int(picked[0][1])
        except Exception as error:
            raise CommitConflict(
                f"{staged.table}: another writer changed the same data since this write was "
                f"staged ({_first_line(error)}); run the step again"
            ) from None
    else:
        raise CommitConflict(
            f"{staged.table}: another writer committed to it since this write was staged; "
            "run the step again"
        )
    if tag is not None:
        refs.tag(name, tag, staged.snapshot_id)
    refs.drop_branch(name, staged.branch)
    return head


def keep_rejected(staged: Staged, key: str, refs: Refs) -> str:
    """Keep a staged write its checks rejected readable under a tag (``medallion_rejected_
    <key>``) instead of its branch; returns the tag. ``main`` does not move."""
    tag = REJECTED_TAG + re.sub(r"[^0-9A-Za-z]", "_", key)
    refs.tag(staged.table, tag, staged.snapshot_id)
    refs.drop_branch(staged.table, staged.branch)
    return tag


def java_table(spark: SparkSession, table: str) -> Any:
    """The table in Iceberg's Java API, freshly loaded (a local session only)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    return jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergTable(
        spark._jsparkSession, identifier(table)
    )


def qualified(table: str) -> str:
    """A procedure's table argument: ``lake.layer.name`` (a bare ``layer.name`` makes Iceberg
    try ``layer`` as a catalog first and log the miss)."""
    return f"{SPARK_CATALOG}.{table}"


def _rebasable(spark: SparkSession, staged: Staged) -> bool:
    """Whether Iceberg can cherry-pick the staged snapshot: an append, or an overwrite of whole
    partitions (``replace-partitions``)."""
    if staged.operation == "append":
        return True
    rows = spark.sql(
        f"SELECT summary['replace-partitions'] FROM {identifier(staged.table)}.snapshots "
        f"WHERE snapshot_id = {staged.snapshot_id}"
    ).collect()
    return bool(rows) and rows[0][0] == "true"


def _first_line(error: BaseException) -> str:
    text = said(error).strip()
    for line in text.splitlines():
        if "Exception:" in line:
            return line.split("Exception:", 1)[1].strip()
    return text.splitlines()[0] if text else type(error).__name__
