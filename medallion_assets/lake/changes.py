"""What a table gained between two of its versions, for an incremental build: the snapshots of
``main`` after the version a build last read, up to the version it reads now; the rows they
appended (Iceberg's incremental append scan) or, when some of them rewrote rows, the keys of
every row that differs between the two versions.

A version id is the snapshot holding the medallion summary: ``main``'s snapshot itself, or the
staged snapshot a cherry-picked copy on ``main`` was made from. Both ends are found on
``main``'s line, so rows another writer appended between them are read too.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from medallion_assets.lake.tables import identifier
from medallion_assets.lake.versions import ancestors

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyspark.sql import Column, DataFrame, SparkSession

# Operations that change no row: a compaction's rewrite of files ("replace").
_SAME_ROWS = ("append", "replace")
# changed_keys' columns: a row's digest, and which end holds it
_ROW, _SIDE = "__medallion_row", "__medallion_side"


@dataclass(frozen=True)
class Changes:
    """``table``'s snapshots on ``main`` after ``start`` up to ``end`` (both snapshot ids on
    ``main``), oldest first, with their operations."""

    table: str
    start: int
    end: int
    snapshots: tuple[tuple[int, str], ...]  # (snapshot id, operation)

    @property
    def none(self) -> bool:
        return not self.snapshots

    @property
    def rewrite(self) -> str | None:
        """The first snapshot that did more than add rows (``overwrite 123``), or None when
        every one only appended (or compacted files).

        >>> Changes("bronze.o", 1, 3, ((2, "append"), (3, "overwrite"))).rewrite
        'overwrite 3'
        >>> Changes("bronze.o", 1, 3, ((2, "append"), (3, "replace"))).rewrite is None
        True
        """
        for snapshot_id, operation in self.snapshots:
            if operation not in _SAME_ROWS:
                return f"{operation} {snapshot_id}"
        return None


def changes_between(loaded: Table, table: str, since: str, until: str) -> Changes | None:
    """The changes of ``table`` (``loaded`` by pyiceberg) from version ``since`` to version
    ``until``; None when ``main``'s line does not hold both in that order (the table was rolled
    back past ``since``, or its snapshots since were expired): only a full read is right then."""
    head = loaded.current_snapshot()
    line = list(ancestors(loaded, head))  # newest first
    end_at = _position(line, until, 0)
    if end_at is None:
        return None
    start_at = _position(line, since, end_at)
    if start_at is None:
        return None
    between = reversed(line[end_at:start_at])
    return Changes(
        table,
        line[start_at].snapshot_id,
        line[end_at].snapshot_id,
        tuple((s.snapshot_id, _operation(s)) for s in between),
    )


def _position(line: list[Snapshot], version_id: str, first: int) -> int | None:
    """Where on ``line`` (from ``first``) the snapshot of version ``version_id`` is: itself or
    its cherry-picked copy."""
    for at, snapshot in itertools.islice(enumerate(line), first, None):
        props = snapshot.summary.additional_properties if snapshot.summary else {}
        if str(snapshot.snapshot_id) == version_id or props.get("source-snapshot-id") == version_id:
            return at
    return None


def _operation(snapshot: Snapshot) -> str:
    operation = snapshot.summary.operation if snapshot.summary is not None else None
    return str(getattr(operation, "value", operation) or "unknown")


def appended_rows(spark: SparkSession, changes: Changes) -> DataFrame:
    """The rows the snapshots of ``changes`` appended (they must only have appended: see
    ``Changes.rewrite``; Iceberg's incremental scan skips any other operation silently)."""
    if changes.rewrite is not None:
        raise ValueError(f"{changes.table}: {changes.rewrite} rewrote rows, not only appended")
    if changes.none:  # Iceberg refuses an empty range
        return spark.table(identifier(changes.table)).limit(0)
    return (
        spark.read.format("iceberg")
        .option("start-snapshot-id", str(changes.start))
        .option("end-snapshot-id", str(changes.end))
        .load(identifier(changes.table))
    )


def changed_keys(
    spark: SparkSession,
    changes: Changes,
    keys: Sequence[str],
    compared: Sequence[str] | None = None,
) -> DataFrame:
    """The ``keys`` columns of every row the snapshots of ``changes`` appended, or, when some
    of them rewrote rows, of every row that is in one end's table and not in the other's, once
    each. (Iceberg's changelog scan would name them, but refuses the delete files a
    merge-on-read MERGE writes: the two ends are compared instead, by a digest of each row.)
    ``compared``: the only columns (with the keys) a row is compared on, those its reader's SQL
    reads: a row changed elsewhere is the same row to that reader, and the two ends are read
    for those columns alone; None compares every column."""
    # pyspark: loaded only where Spark runs (the CLI reads the lake without it)
    from pyspark.sql import functions as F

    picked = [F.col(f"`{key}`") for key in keys]
    if changes.rewrite is None:
        return appended_rows(spark, changes).select(*picked).distinct()
    wanted = None if compared is None else {c.lower() for c in (*compared, *keys)}

    def counted(snapshot_id: int, side: int) -> DataFrame:
        frame = spark.read.option("versionAsOf", str(snapshot_id)).table(identifier(changes.table))
        if wanted is not None:
            frame = frame.select(*[f"`{c}`" for c in frame.columns if c.lower() in wanted])
        return frame.select(*picked, row_digest(frame).alias(_ROW), F.lit(side).alias(_SIDE))

    # A row is changed when the two ends hold it a different number of times: one shuffle of
    # both ends by key and digest (the end's copies count -1, the start's +1).
    both = counted(changes.start, 1).unionByName(counted(changes.end, -1))
    held = both.groupBy(*picked, F.col(_ROW)).agg(F.sum(_SIDE).alias(_SIDE))
    return held.where(F.col(_SIDE) != 0).select(*picked).distinct()


def row_digest(frame: DataFrame) -> Column:
    """A 64-bit digest of each of ``frame``'s rows: every column's value and whether it is
    NULL (so ``(NULL, 1)`` and ``(1, NULL)`` differ), hashed where Spark computes it, without
    turning the row into text; a column holding a map, which Spark does not hash, is hashed
    as its JSON."""
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    parts = []
    for field in frame.schema.fields:
        column = F.col(f"`{field.name}`")
        value = F.to_json(column) if "map<" in field.dataType.simpleString() else column
        parts += [value, column.isNull()]
    return F.xxhash64(*parts)
