"""A day of a daily table rolled back: its rows as of a snapshot, written as the day's new
version, recorded as built by what built them then (``Lake.rollback``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from medallion_assets.lake import snapshots, versions
from medallion_assets.lake.records import Produced, StagedWrite
from medallion_assets.lake.versions import Version

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession


class DayLake(Protocol):
    """What a day's rollback uses of ``Lake``."""

    def partition_column(self, table: str) -> str | None: ...

    def _load(self, table: str) -> Table | None: ...

    def read_snapshot(self, spark: SparkSession, table: str, snapshot_id: int) -> DataFrame: ...

    def stage(
        self,
        spark: SparkSession,
        frame: DataFrame,
        table: str,
        produced: Produced,
        *,
        partition: str | None = None,
        partition_column: str | None = None,
    ) -> StagedWrite: ...

    def publish(self, spark: SparkSession, staged: StagedWrite) -> Version: ...


def rollback_day(
    lake: DayLake, spark: SparkSession, table: str, snapshot_id: int, partition: str
) -> Version:
    """Rewrite day ``partition`` of ``table`` with its rows as of ``snapshot_id``; returns the
    day's version now current."""
    column = lake.partition_column(table)
    if column is None:
        raise snapshots.UnknownSnapshot(f"{table} is not a daily table: leave out the day")
    snapshots.require_snapshot(spark, table, snapshot_id)
    loaded = lake._load(table)
    assert loaded is not None
    snapshot = loaded.snapshot_by_id(snapshot_id)
    source = versions.version_of(table, snapshot) if snapshot is not None else None
    built_by = source if source is not None and source.partition == partition else None
    if built_by is None:  # the snapshot of another day's write: the day's version then
        built_by = _day_version_at(loaded, table, partition, snapshot_id)
    produced = Produced(
        built_by.code_version if built_by else "",
        built_by.inputs if built_by else {},
        built_by.run_id if built_by else "",
        {"rolled_back_to": str(snapshot_id)},
    )
    # pyspark: loaded only where Spark runs (the CLI reads the lake without it)
    from pyspark.sql import functions as F

    rows = lake.read_snapshot(spark, table, snapshot_id).where(
        F.col(f"`{column}`") == F.lit(partition)
    )
    staged = lake.stage(spark, rows, table, produced, partition=partition, partition_column=column)
    return lake.publish(spark, staged)


def _day_version_at(loaded: Any, table: str, partition: str, snapshot_id: int) -> Version | None:
    """The newest write of ``partition`` at or before ``snapshot_id`` on ``main``."""
    snapshot = loaded.snapshot_by_id(snapshot_id)
    for older in versions.ancestors(loaded, snapshot):
        found = versions.version_of(table, versions.versioned(loaded, older) or older)
        if found is not None and found.partition == partition:
            return found
    return None
