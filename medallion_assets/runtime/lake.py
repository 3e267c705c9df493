"""The lake: versioned tables on a filesystem, published atomically.

Layout of one table (or one partition of a daily-partitioned table)::

    <root>/<layer>/<table>[/partitions/<key>]/
        versions/<version_id>/part-*.parquet   each version complete, written once
        versions/<version_id>/_version.json    what produced it (code, inputs, rows)
        _staging/<staging_id>/                  output being written or validated
        CURRENT                                 {"version": "<version_id>"}

A run writes to ``_staging``; publishing renames the staged folder into ``versions/`` and then
replaces ``CURRENT`` with ``os.replace``. Readers follow ``CURRENT``, so they see the previous
version or the new one, never a half-written one; a crash before the pointer moves leaves the
previous version current. Older versions are kept (``keep_versions``) for rollback and for
readers still holding them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_assets.lake.versions import built_from
from medallion_assets.runtime.faults import crash_point

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from medallion_assets.settings import MedallionSettings

VERSION_FILE = "_version.json"
POINTER = "CURRENT"


@dataclass(frozen=True)
class TableVersion:
    table: str
    partition: str | None
    version_id: str
    code_version: str
    inputs: dict[str, str]  # upstream table (or source object set) -> version it was built from
    rows: int
    created_at: float
    run_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


class Lake:
    """Versioned tables under ``root``; ``on_publish`` lets tests inject a crash mid-publish."""

    def __init__(
        self,
        root: Path,
        keep_versions: int = 3,
        on_publish: Callable[[str], None] | None = None,
    ):
        if keep_versions < 1:
            raise ValueError("keep_versions must be at least 1: the current version is kept")
        self.root = root
        self.keep_versions = keep_versions
        self._on_publish = on_publish or (lambda _step: None)

    @classmethod
    def of(cls, settings: MedallionSettings) -> Lake:
        """The lake the settings name (``lake_root``), keeping ``keep_versions`` per table."""
        return cls(settings.lake_root, keep_versions=settings.keep_versions)

    # --- locations ------------------------------------------------------------------------------

    def table_dir(self, table: str, partition: str | None = None) -> Path:
        layer, name = table.split(".", 1)
        base = self.root / layer / name
        return base / "partitions" / partition if partition else base

    def partitions(self, table: str) -> list[str]:
        folder = self.table_dir(table) / "partitions"
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if (p / POINTER).is_file())

    def is_partitioned(self, table: str) -> bool:
        return (self.table_dir(table) / "partitions").is_dir()

    # --- reading ----------------------------------------------------------------------------------

    def current(self, table: str, partition: str | None = None) -> TableVersion | None:
        folder = self.table_dir(table, partition)
        try:
            pointer = json.loads((folder / POINTER).read_text())
            info = json.loads((folder / "versions" / pointer["version"] / VERSION_FILE).read_text())
        except (OSError, ValueError, KeyError):
            return None
        return TableVersion(**info)

    def reusable(
        self,
        table: str,
        partition: str | None,
        code_version: str,
        inputs: Mapping[str, str],
        ignoring: str | None = None,
    ) -> TableVersion | None:
        """The current version when it was built from this code and these inputs: nothing to
        recompute. ``ignoring`` names a recorded input left out of the comparison (a MERGE
        table's own previous version)."""
        current = self.current(table, partition)
        if current is None or not built_from(current, code_version, inputs, ignoring):
            return None
        return current

    def version_path(self, version: TableVersion) -> Path:
        return self.table_dir(version.table, version.partition) / "versions" / version.version_id

    def current_paths(self, table: str, partitions: list[str] | None = None) -> list[Path]:
        """Folders holding the current data: one per partition, or the table's one."""
        return [self.version_path(v) for v in self.current_versions(table, partitions)]

    def current_versions(
        self, table: str, partitions: list[str] | None = None
    ) -> list[TableVersion]:
        """The current versions: one per partition (those that have one), or the table's one."""
        if self.is_partitioned(table):
            wanted = self.partitions(table) if partitions is None else partitions
            versions = [self.current(table, p) for p in wanted]
        else:
            versions = [self.current(table)]
        return [v for v in versions if v is not None]

    def read(self, spark: SparkSession, versions: list[TableVersion]) -> DataFrame:
        """The data of published versions, once their files' footers add up to the rows
        published: read with the schema recorded at publish when they all recorded the same
        one (no schema-inference job per read); else, as for a version published before schemas
        were recorded or days of a table whose schema evolved, with the schema Spark infers."""
        paths = [self.version_path(v) for v in versions]
        for version, path in zip(versions, paths, strict=True):
            # Spark reads a zero-byte file as no rows and a deleted one not at all: the footers
            # must add up to the rows published (a damaged footer raises here, naming the file).
            found = staged_rows(path)
            if found != version.rows:
                raise ValueError(
                    f"{found} rows in its Parquet files, not the {version.rows} published "
                    "(a file is missing or damaged)"
                )
        recorded = {v.extra.get("schema") for v in versions}
        reader = spark.read
        if len(recorded) == 1 and (schema := recorded.pop()) is not None:
            from pyspark.sql.types import StructType

            reader = reader.schema(StructType.fromJson(json.loads(schema)))
        return reader.parquet(*[str(p) for p in paths])

    def read_current(
        self, spark: SparkSession, table: str, partitions: list[str] | None = None
    ) -> DataFrame | None:
        """The current data of ``table`` (of those days), or None when nothing is published."""
        versions = self.current_versions(table, partitions)
        return self.read(spark, versions) if versions else None

    def read_arrow(self, versions: list[TableVersion]) -> pa.Table:
        """The data of published versions as one Arrow table, read without Spark."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        tables = [pq.read_table(self.version_path(v)) for v in versions]
        return pa.concat_tables(tables, promote_options="default")

    def data_files(self, versions: list[TableVersion]) -> list[Path]:
        """The Parquet files holding published versions (for their sizes and schema)."""
        paths = [self.version_path(v) for v in versions]
        return [f for p in paths if p.is_dir() for f in sorted(p.glob("*.parquet"))]

    def location(self, versions: list[TableVersion]) -> str:
        """Where published versions are, for a message."""
        return ", ".join(str(self.version_path(v)) for v in versions)

    def versions(self, table: str, partition: str | None = None) -> list[str]:
        folder = self.table_dir(table, partition) / "versions"
        if not folder.is_dir():
            return []
        return sorted(p.name for p in folder.iterdir() if (p / VERSION_FILE).is_file())

    # --- writing ----------------------------------------------------------------------------------

    def new_staging(self, table: str, partition: str | None = None) -> Path:
        """A fresh, empty staging folder for one attempt (Spark writes into it)."""
        staging = self.table_dir(table, partition) / "_staging" / uuid.uuid4().hex
        staging.parent.mkdir(parents=True, exist_ok=True)
        return staging

    def publish(
        self,
        staging: Path,
        table: str,
        partition: str | None,
        code_version: str,
        inputs: Mapping[str, str],
        rows: int,
        run_id: str = "",
        extra: Mapping[str, Any] | None = None,
    ) -> TableVersion:
        """Make the staged output the current version, atomically."""
        if not staging.is_dir():
            raise FileNotFoundError(f"nothing staged at {staging}")
        version_id = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{uuid.uuid4().hex[:8]}"
        version = TableVersion(
            table,
            partition,
            version_id,
            code_version,
            dict(inputs),
            rows,
            time.time(),
            run_id,
            dict(extra or {}),
        )
        (staging / VERSION_FILE).write_text(version.as_json())
        folder = self.table_dir(table, partition)
        final = folder / "versions" / version_id
        final.parent.mkdir(parents=True, exist_ok=True)
        os.rename(staging, final)  # same filesystem: atomic
        self._on_publish("renamed")
        crash_point("lake.renamed", table, partition)
        _atomic_write(folder / POINTER, json.dumps({"version": version_id}))
        self._prune(table, partition, keep=version_id)
        return version

    def stage_frame(
        self, frame: DataFrame, table: str, partition: str | None = None
    ) -> tuple[Path, DataFrame]:
        """Write a Spark DataFrame to a fresh staging folder; (folder, the staged data read back).

        Checks and row counts then run on exactly what would be published. The files are read
        back with the schema they were written with (Spark reads every column as nullable), so
        reading them starts no schema-inference job.
        """
        staging = self.new_staging(table, partition)
        frame.write.mode("overwrite").parquet(str(staging))
        return staging, frame.sparkSession.read.schema(frame.schema).parquet(str(staging))

    def discard(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)

    def keep_rejected(self, staging: Path) -> None:
        """Keep ``staging`` (output its checks rejected) for inspection; older outputs kept
        of the same table (day) are dropped."""
        for other in staging.parent.iterdir():
            if other != staging:
                shutil.rmtree(other, ignore_errors=True)

    def clear_staging(self, table: str, partition: str | None = None) -> int:
        """Remove leftovers of failed attempts; returns how many were removed."""
        folder = self.table_dir(table, partition) / "_staging"
        if not folder.is_dir():
            return 0
        leftovers = list(folder.iterdir())
        for path in leftovers:
            shutil.rmtree(path, ignore_errors=True)
        return len(leftovers)

    def _prune(self, table: str, partition: str | None, keep: str) -> None:
        versions = self.versions(table, partition)
        old = [v for v in versions if v != keep][: max(0, len(versions) - self.keep_versions)]
        for version_id in old:
            shutil.rmtree(
                self.table_dir(table, partition) / "versions" / version_id, ignore_errors=True
            )


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def staged_rows(staging: Path) -> int:
    """Rows in the Parquet files Spark wrote to ``staging``, from their footers (no Spark job)."""
    import pyarrow.parquet as pq

    rows = 0
    for path in sorted(staging.rglob("*.parquet")):
        if path.name.startswith(("_", ".")):
            continue
        try:
            rows += pq.ParquetFile(path).metadata.num_rows
        except Exception as error:  # pyarrow's message does not say which file
            raise ValueError(f"{path.name}: {error}") from error
    return rows
