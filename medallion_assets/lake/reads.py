"""Reading published versions, with Spark (``read``, ``read_snapshot``) or without a JVM
(``read_arrow``, ``read_snapshot_arrow``, ``footprint``): the reading half of ``Lake``."""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any

from medallion_assets.lake import snapshots, tables
from medallion_assets.lake.changes import Changes, changes_between
from medallion_assets.lake.records import Footprint
from medallion_assets.lake.versions import Version

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession


class LakeReads:
    """The reads of ``Lake``, over what it provides: the session attached to the lake, a
    table's day column, its current versions and its pyiceberg table."""

    def attach(self, spark: SparkSession) -> SparkSession:
        raise NotImplementedError

    def where(self) -> str:
        raise NotImplementedError

    def partition_column(self, table: str) -> str | None:
        raise NotImplementedError

    def current_versions(self, table: str, partitions: list[str] | None = None) -> list[Version]:
        raise NotImplementedError

    def _load(self, table: str) -> Table | None:
        raise NotImplementedError

    # --- --------------------------------------------------------------------------------

    def read(self, spark: SparkSession, found: list[Version]) -> DataFrame:
        """The data of published versions: each at its snapshot (a day's: only its rows)."""

        # pyspark: loaded only where Spark runs (the CLI reads the lake without it)
        from pyspark.sql import functions as F

        if not found:
            raise ValueError("no versions to read")
        self.attach(spark)
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

    def changes(self, table: str, since: str, until: str) -> Changes | None:
        """What ``table`` gained from version ``since`` to version ``until`` (``lake.changes``);
        None when ``main``'s line no longer holds both (rolled back, expired) or there is no
        such table."""
        loaded = self._load(table)
        return changes_between(loaded, table, since, until) if loaded is not None else None

    def read_current(
        self, spark: SparkSession, table: str, partitions: list[str] | None = None
    ) -> DataFrame | None:
        """The current data of ``table`` (of those days), or None when nothing is published."""
        found = self.current_versions(table, partitions)
        return self.read(spark, found) if found else None

    def read_arrow(self, found: list[Version]) -> pa.Table:
        """The data of published versions as one Arrow table, read without a JVM."""
        # pyiceberg and pyarrow: loaded only when the lake is read without Spark
        import pyarrow as pa
        from pyiceberg.expressions import EqualTo

        columns = {table: self.partition_column(table) for table in {v.table for v in found}}
        parts = []
        for version in found:
            loaded = self._load(version.table)
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
        # "permissive": an empty day scans as string, a day with files as large_string
        return pa.concat_tables(parts, promote_options="permissive")

    def read_snapshot(self, spark: SparkSession, table: str, snapshot_id: int) -> DataFrame:
        """The whole table as of one snapshot (``UnknownSnapshot`` when it has none such)."""
        self.attach(spark)
        snapshots.require_snapshot(spark, table, snapshot_id)
        return spark.read.option("versionAsOf", str(snapshot_id)).table(tables.identifier(table))

    def read_snapshot_arrow(self, table: str, snapshot_id: int) -> pa.Table:
        """``read_snapshot`` without a JVM."""
        loaded = self._load(table)
        if loaded is None:
            raise LookupError(f"the lake {self.where()} has no table {table}")
        if loaded.snapshot_by_id(snapshot_id) is None:
            raise snapshots.UnknownSnapshot(
                f"{table} has no snapshot {snapshot_id} (expired, or of another table); see "
                f"`medallion table history {table}`"
            )
        return loaded.scan(snapshot_id=snapshot_id).to_arrow()

    def footprint(self, found: list[Version]) -> Footprint:
        """The data files published versions read, their bytes, and the columns (from the
        catalog's metadata, no data read)."""
        # pyiceberg and pyarrow: loaded only when the lake is read without Spark
        from pyiceberg.expressions import AlwaysTrue, EqualTo

        files, size, paths = 0, 0, []
        columns: tuple[tuple[str, str], ...] = ()
        for version in found:
            loaded = self._load(version.table)
            if loaded is None:
                continue
            snapshot = loaded.snapshot_by_id(int(version.version_id))
            column = self.partition_column(version.table) if version.partition else None
            equal_to: Any = EqualTo  # (mypy's pydantic plugin misreads its signature)
            where = equal_to(column, version.partition) if column else AlwaysTrue()
            tasks = list(
                loaded.scan(snapshot_id=int(version.version_id), row_filter=where).plan_files()
            )
            files += len(tasks)
            paths += [t.file.file_path for t in tasks]
            size += sum(t.file.file_size_in_bytes for t in tasks)
            schema = (
                loaded.schemas().get(snapshot.schema_id)
                if snapshot and snapshot.schema_id is not None
                else loaded.schema()
            )
            columns = tuple((f.name, str(f.field_type)) for f in (schema or loaded.schema()).fields)
        return Footprint(files, size, columns, tuple(paths))

    def location(self, found: list[Version]) -> str:
        """Where published versions are, for a message."""
        return ", ".join(
            f"{tables.identifier(v.table)} snapshot {v.version_id}"
            + (f" [{v.partition}]" if v.partition else "")
            for v in found
        )
