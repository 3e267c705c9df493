"""The lake as one object over the Iceberg catalog: stage, check, publish, read, history,
rollback, retention. It is what ``runtime.lake.Lake`` (the folder layout) will be replaced by:
the same questions (what is current, can it be reused, read these versions) answered from
snapshot summaries and tags instead of ``CURRENT`` pointers and ``_version.json`` files.

What produced a write (``Produced``) goes into its snapshot's summary when it is staged; the
checks then read the staged snapshot (``stage`` returns it as a DataFrame) and ``publish`` makes
it current in one catalog commit, then expires what ``keep_versions`` no longer keeps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from medallion_assets.lake import tables, versions
from medallion_assets.lake.catalog import LakeCatalog
from medallion_assets.lake.versions import Version

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class Produced:
    """What a write records in its snapshot's summary: the code and the inputs it was built
    from (input table -> the version read), the run, and any small extra facts."""

    code_version: str
    inputs: Mapping[str, str] = field(default_factory=dict)
    run_id: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)

    def summary(self, partition: str | None) -> dict[str, str]:
        props = {
            "code-version": self.code_version,
            "inputs": json.dumps(dict(self.inputs), sort_keys=True),
            "run-id": self.run_id,
            "extra": json.dumps(dict(self.extra), sort_keys=True, default=str),
        }
        return {**props, "partition": partition} if partition else props


class IcebergLake:
    """The tables of one lake catalog; Spark writes, pyiceberg answers what is current."""

    def __init__(self, catalog: LakeCatalog, keep_versions: int = 3):
        if keep_versions < 1:
            raise ValueError("keep_versions must be at least 1: the current version is kept")
        self.catalog = catalog
        self.keep_versions = keep_versions

    @cached_property
    def _metadata(self) -> Catalog:
        return versions.open_catalog(self.catalog)

    # --- what is current ------------------------------------------------------------------------

    def current(self, table: str, partition: str | None = None) -> Version | None:
        return versions.current(self._metadata, table, partition)

    def partitions(self, table: str) -> list[str]:
        return versions.partitions(self._metadata, table)

    def is_partitioned(self, table: str) -> bool:
        return self.partition_column(table) is not None

    def partition_column(self, table: str) -> str | None:
        """The column a daily table is partitioned by (identity), else None."""
        loaded = versions.load(self._metadata, table)
        if loaded is None:
            return None
        fields = loaded.spec().fields
        return loaded.schema().find_column_name(fields[0].source_id) if fields else None

    def current_versions(self, table: str, partitions: list[str] | None = None) -> list[Version]:
        """The current versions: one per day (those that have one), or the table's one."""
        loaded = versions.load(self._metadata, table)
        if loaded is None:
            return []
        if loaded.spec().fields:
            wanted = versions.partitions_in(loaded) if partitions is None else partitions
            found = [versions.current_in(loaded, table, p) for p in wanted]
        else:
            found = [versions.current_in(loaded, table)]
        return [v for v in found if v is not None]

    def reusable(
        self,
        table: str,
        partition: str | None,
        code_version: str,
        inputs: Mapping[str, str],
        ignoring: str | None = None,
    ) -> Version | None:
        """The current version when it was built from this code and these inputs (``ignoring``
        one recorded input, a MERGE table's own previous version)."""
        current = self.current(table, partition)
        if current is None or not versions.built_from(current, code_version, inputs, ignoring):
            return None
        return current

    # --- writing --------------------------------------------------------------------------------

    def stage(
        self,
        spark: SparkSession,
        frame: DataFrame,
        table: str,
        produced: Produced,
        *,
        partition: str | None = None,
        partition_column: str | None = None,
        mode: tables.Mode = "replace",
    ) -> tuple[tables.Staged, DataFrame]:
        """Write ``frame`` as a staged snapshot; (the write, exactly its rows to check)."""
        staged = tables.stage(
            spark,
            frame,
            table,
            mode=mode,
            partition=partition,
            partition_column=partition_column,
            properties=produced.summary(partition),
        )
        return staged, tables.read_staged(spark, staged)

    def publish(self, spark: SparkSession, staged: tables.Staged) -> Version:
        """Make the staged write current (one catalog commit), then expire the snapshots past
        the newest ``keep_versions`` (a day's current version is tagged and kept)."""
        tables.publish(spark, staged)
        tables.expire(spark, staged.table, self.keep_versions)
        published = self.current(staged.table, staged.partition)
        assert published is not None, f"{staged.table}: published but not current"
        return published

    def discard(self, spark: SparkSession, staged: tables.Staged) -> None:
        """Forget a staged write (its files go with the next orphan clean-up)."""
        tables.drop_branch(spark, staged.table, staged.branch)

    def keep_rejected(self, spark: SparkSession, staged: tables.Staged) -> str:
        """Keep a write its checks rejected readable under a tag; returns where it is kept."""
        tag = tables.keep_rejected(spark, staged, staged.partition or "table")
        return f"{tables.identifier(staged.table)} VERSION AS OF '{tag}'"

    # --- reading --------------------------------------------------------------------------------

    def read(self, spark: SparkSession, found: list[Version]) -> DataFrame:
        """The data of published versions: each at its snapshot (a day's: only its rows)."""
        from functools import reduce

        from pyspark.sql import functions as F

        if not found:
            raise ValueError("no versions to read")
        columns = {table: self.partition_column(table) for table in {v.table for v in found}}
        frames = []
        for version in found:
            frame = spark.read.option("versionAsOf", version.version_id).table(
                tables.identifier(version.table)
            )
            column = columns[version.table] if version.partition else None
            if column is not None:
                frame = frame.where(F.col(f"`{column}`") == F.lit(version.partition))
            frames.append(frame)
        return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), frames)

    def read_arrow(self, found: list[Version]) -> pa.Table:
        """The data of published versions as one Arrow table, read without a JVM."""
        import pyarrow as pa
        from pyiceberg.expressions import EqualTo

        columns = {table: self.partition_column(table) for table in {v.table for v in found}}
        parts = []
        for version in found:
            loaded = versions.load(self._metadata, version.table)
            if loaded is None:
                raise LookupError(f"the lake has no table {version.table}")
            column = columns[version.table] if version.partition else None
            snapshot = int(version.version_id)
            if column is not None and version.partition is not None:
                # pyiceberg's own constructor (mypy's pydantic plugin misreads its signature)
                equal_to: Any = EqualTo
                day = equal_to(column, version.partition)
                parts.append(loaded.scan(snapshot_id=snapshot, row_filter=day).to_arrow())
            else:
                parts.append(loaded.scan(snapshot_id=snapshot).to_arrow())
        return pa.concat_tables(parts, promote_options="default")

    def history(self, table: str) -> list[versions.HistoryEntry]:
        return versions.history(self._metadata, table)

    def rollback(self, spark: SparkSession, table: str, snapshot_id: int) -> None:
        tables.rollback(spark, table, snapshot_id)
