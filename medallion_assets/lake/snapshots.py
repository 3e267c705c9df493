"""A table's snapshots through Spark's Iceberg procedures: one required by id, rolled back to,
and the old ones expired."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from medallion_assets.errors import ResourceError
from medallion_assets.lake.catalog import SPARK_CATALOG
from medallion_assets.lake.tables import identifier, java_table, qualified

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class UnknownSnapshot(ResourceError):
    """A rollback names a snapshot the table does not have (or no longer has)."""


def require_snapshot(spark: SparkSession, table: str, snapshot_id: int) -> None:
    """``UnknownSnapshot`` naming the table's newest snapshots when it has no ``snapshot_id``."""
    known = [
        int(row[0])
        for row in spark.sql(
            f"SELECT snapshot_id FROM {identifier(table)}.snapshots ORDER BY committed_at DESC"
        ).collect()
    ]
    if snapshot_id not in known:
        newest = ", ".join(str(s) for s in known[:5]) or "none"
        raise UnknownSnapshot(
            f"{table} has no snapshot {snapshot_id} (expired, or of another table); its newest: "
            f"{newest}"
        )


def rollback(spark: SparkSession, table: str, snapshot_id: int) -> None:
    """Make ``snapshot_id`` ``main``'s head (one catalog commit; later snapshots stay readable
    until expired); ``UnknownSnapshot`` naming the newest ones when the table has no such
    snapshot."""
    require_snapshot(spark, table, snapshot_id)
    spark.sql(
        f"CALL {SPARK_CATALOG}.system.set_current_snapshot(table => '{qualified(table)}', "
        f"snapshot_id => {snapshot_id})"
    )


def expire(spark: SparkSession, table: str, keep: int) -> None:
    """Expire ``main``'s snapshots beyond the newest ``keep`` (tagged ones, a day's published
    version or a rejected write, are kept) and delete the files only they held. In a local
    session through Iceberg's Java API in the driver (the ``expire_snapshots`` procedure starts
    a Spark job of hundreds of tasks for every table, however small); over Spark Connect,
    which has no JVM here, through the procedure."""
    older_than = time.time() + 1
    if getattr(spark, "_jsparkSession", None) is not None:
        java = java_table(spark, table)
        java.expireSnapshots().expireOlderThan(int(older_than * 1000)).retainLast(keep).commit()
        return
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(older_than))
    spark.sql(
        f"CALL {SPARK_CATALOG}.system.expire_snapshots(table => '{qualified(table)}', "
        f"older_than => TIMESTAMP '{when}', retain_last => {keep})"
    ).collect()
