"""The lake: every bronze, silver, gold and quarantine table an Iceberg table in one catalog.
Stage, check, publish, read, history, rollback, retention, as one object over the catalog.

What produced a write (``Produced``) goes into its snapshot's summary when it is staged on a
branch of its own; the checks then read the staged snapshot (``stage`` returns it as a
DataFrame) and ``publish`` makes it current in one catalog commit, then expires what
``keep_versions`` no longer keeps. The questions a run asks (what is current, can it be reused)
are answered from snapshot summaries and tags, read without a JVM (pyiceberg).

A Spark session holds the lake as catalog ``lake``; ``attach`` points a session at this lake's
catalog (a test run's one Spark serves many lakes, one after the other).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_assets.lake import env_writes, proof, repair, snapshots, tables, versions
from medallion_assets.lake.catalog import EMBEDDED_CATALOG, LakeCatalog
from medallion_assets.lake.env_ops import EnvOps
from medallion_assets.lake.env_refs import check_env_name
from medallion_assets.lake.orphans import SAFE_AGE_S, Orphan, orphan_files, remove
from medallion_assets.lake.reads import LakeReads
from medallion_assets.lake.records import (
    Produced,
    RowsOutsideTheDay,
    StagedWrite,
    check_layout,
    storable,
)
from medallion_assets.lake.refs import STALE_STAGING_S, Refs, drop_staging_branches
from medallion_assets.lake.rollbacks import rollback_day
from medallion_assets.lake.session import attach
from medallion_assets.lake.versions import Version

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession

    from medallion_assets.settings import MedallionSettings


class Lake(LakeReads):
    """The tables of one lake catalog; Spark writes, pyiceberg answers what is current."""

    def __init__(self, catalog: LakeCatalog, keep_versions: int = 3, env: str | None = None):
        if keep_versions < 1:
            raise ValueError("keep_versions must be at least 1: the current version is kept")
        self.catalog = catalog
        self.keep_versions = keep_versions
        self.env = env  # a dev environment's name: its builds publish to its branches
        self._memo: dict[str, Table | None] | None = None  # tables loaded (``memoized``)

    def in_env(self, env: str | None) -> Lake:
        """This lake as dev environment ``env`` sees it (``lake.env_writes``): the versions it
        built, else ``main``'s; what it builds publishes to its branch. ``None``: ``main``."""
        if env == self.env:
            return self
        seen = copy.copy(self)  # the same catalog connection
        seen.env = check_env_name(env) if env is not None else None
        return seen

    @classmethod
    def of(cls, settings: MedallionSettings) -> Lake:
        """The lake the settings name (``MEDALLION_LAKE``, ``MEDALLION_LAKE_CATALOG``)."""
        return cls(LakeCatalog.of(settings), keep_versions=settings.keep_versions)

    @classmethod
    def local(cls, folder: Path, keep_versions: int = 3) -> Lake:
        """An embedded lake: warehouse ``folder`` with its SQLite catalog inside
        (``<folder>/catalog.db``), as the defaults lay it out."""
        catalog = folder / EMBEDDED_CATALOG
        return cls(LakeCatalog.parse(f"sqlite:///{catalog}", str(folder)), keep_versions)

    @property
    def root(self) -> Path | None:
        """The warehouse folder of a local lake (None on S3)."""
        where = self.catalog.warehouse
        return Path(where.removeprefix("file:")) if where.startswith("file:") else None

    def where(self) -> str:
        """The lake for a message: its warehouse (a catalog's password never shows)."""
        return self.catalog.warehouse.replace("s3a://", "s3://")

    @cached_property
    def _metadata(self) -> Catalog:
        self.catalog.make_folder()  # the folder of an embedded catalog to open
        return versions.open_catalog(self.catalog)

    @cached_property
    def _refs(self) -> Refs:
        return Refs(self._metadata)

    def _load(self, table: str) -> Table | None:
        """``table`` as pyiceberg loads it (fresh; once per ``memoized`` view), or None when
        the lake has no such table."""
        if self._memo is not None and table in self._memo:
            return self._memo[table]
        found = versions.load(self._metadata, table) if self.exists() else None
        if self._memo is not None:
            self._memo[table] = found
        return found

    def memoized(self) -> Lake:
        """This lake reading each table's metadata once (a command that only decides, then
        commits through fresh loads: a plan, a promotion's checks), not a run's."""
        seen = copy.copy(self)
        seen._memo = {}
        return seen

    def exists(self) -> bool:
        """False for an embedded catalog whose file does not exist yet (no table written):
        opening it would create it."""
        sqlite = self.catalog.sqlite_file
        return sqlite is None or sqlite.is_file()

    def check_layout(self) -> None:
        """``OldLakeLayout`` when the warehouse folder holds the folder layout of before."""
        check_layout(self.root)

    def attach(self, spark: SparkSession) -> SparkSession:
        """Point ``spark``'s catalog ``lake`` at this lake (``lake.session.attach``)."""
        return attach(self.catalog, spark)

    # --- what is current ------------------------------------------------------------------------

    def current(self, table: str, partition: str | None = None) -> Version | None:
        loaded = self._load(table)
        return versions.current_in(loaded, table, partition, self.env) if loaded else None

    def environments(self) -> EnvOps:
        """The lake's dev environments: listed, dropped, promoted (``lake.env_ops``)."""
        return EnvOps(self._metadata)

    def refs_of(self, table: str) -> dict[str, int]:
        """The table's branches and tags: name -> the snapshot each points at."""
        loaded = self._load(table)
        refs = loaded.metadata.refs if loaded is not None else {}
        return {name: ref.snapshot_id for name, ref in refs.items()}

    def partitions(self, table: str) -> list[str]:
        loaded = self._load(table)
        return versions.partitions_in(loaded, self.env) if loaded is not None else []

    def is_partitioned(self, table: str) -> bool:
        return self.partition_column(table) is not None

    def partition_column(self, table: str) -> str | None:
        """The column a daily table is partitioned by (identity), else None."""
        loaded = self._load(table)
        if loaded is None:
            return None
        fields = loaded.spec().fields
        return loaded.schema().find_column_name(fields[0].source_id) if fields else None

    def current_versions(self, table: str, partitions: list[str] | None = None) -> list[Version]:
        """The current versions: one per day (those that have one), or the table's one."""
        loaded = self._load(table)
        if loaded is None:
            return []
        if loaded.spec().fields:
            wanted = versions.partitions_in(loaded, self.env) if partitions is None else partitions
            found = [versions.current_in(loaded, table, p, self.env) for p in wanted]
        else:
            found = [versions.current_in(loaded, table, None, self.env)]
        return [v for v in found if v is not None]

    def reusable(
        self,
        table: str,
        partition: str | None,
        code_version: str,
        inputs: Mapping[str, str],
        ignoring: str | None = None,
        say: Callable[[str], None] | None = None,
    ) -> Version | None:
        """The current version when it was built from this code and these inputs (``ignoring``
        one recorded input, a MERGE table's own previous version) and is still what was
        published: no schema change or lost file since (``lake.proof``; another engine's),
        else ``say`` is told why it is rebuilt."""
        loaded = self._load(table)
        current = versions.current_in(loaded, table, partition, self.env) if loaded else None
        if current is None or not versions.built_from(current, code_version, inputs, ignoring):
            return None
        if loaded is not None and (why := proof.doubt(loaded, partition, env=self.env)):
            if say is not None:
                day = f"[{partition}]" if partition else ""
                say(f"rebuilding {table}{day}, though its code and inputs are unchanged: {why}")
            return None
        return current

    def doubt(self, table: str, partition: str | None = None, every_file: bool = False) -> str:
        """Why ``table``'s version in force may not be what medallion published (``proof``)."""
        loaded = self._load(table)
        return proof.doubt(loaded, partition, every_file, self.env) if loaded is not None else ""

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
    ) -> StagedWrite:
        """Write ``frame`` as a staged snapshot of ``table``: ``replace`` the table (a daily
        table: its day) or ``append`` to it."""
        self.attach(spark)
        frame = storable(frame)
        summary = produced.summary(partition)
        if mode == "append" and partition is not None:
            # A day's rows after an append are not in Iceberg's summary: record them.
            before = self.current(table, partition)
            summary["rows"] = str((before.rows if before else 0) + frame.count())
        loaded = self._load(table)
        target = env_writes.Target.of(loaded, self.env)
        if self.env is not None:
            env_writes.refuse_type_changes(spark, table, frame, self.env)
        if self.env is not None and mode == "replace" and partition_column is None:
            # the columns this version no longer has: written NULL here (main's readers share
            # the table's schema), dropped when the environment is promoted
            kept = {c.lower() for c in frame.columns}
            have = loaded.schema().fields if loaded is not None else ()
            summary["env-drops"] = json.dumps([f.name for f in have if f.name.lower() not in kept])
        staged = tables.stage(
            spark,
            frame,
            table,
            mode=mode,
            partition=partition,
            partition_column=partition_column,
            properties=summary,
            refs=self._refs,
            base=target.base,
            keep_schema=self.env is not None,
        )
        if partition is not None and partition_column is not None:
            staged = self._own_day(spark, frame, staged, partition_column, summary, mode)
        staged = target.on(staged)
        return StagedWrite(staged, tables.read_staged(spark, staged))

    def _own_day(
        self,
        spark: SparkSession,
        frame: DataFrame,
        staged: tables.Staged,
        column: str,
        summary: Mapping[str, str],
        mode: tables.Mode,
    ) -> tables.Staged:
        """The staged write of one day, once it changed only that day: rows of other days
        would replace (or add to) those days' data, so they stop the write."""
        # pyspark: loaded only where Spark runs (the CLI reads the lake without it)
        from pyspark.sql import functions as F

        day = staged.partition
        if staged.changed_partitions > 1:
            self._refs.drop_branch(staged.table, staged.branch)
            value = F.col(f"`{column}`")
            outside = frame.where(value.isNull() | (value != F.lit(day))).count()
            raise RowsOutsideTheDay(
                f"{staged.table}[{day}]: {outside} of the rows built for {day} have another "
                f"{column} (or none), so publishing them would change other days; make the "
                f"SQL produce only rows of its day (e.g. WHERE {column} = the day)"
            )
        if staged.changed_partitions == 0 and mode == "replace":
            return tables.empty_day(spark, staged, column, summary, self._refs)
        return staged

    def stage_sql(
        self, spark: SparkSession, table: str, statement: str, produced: Produced
    ) -> StagedWrite:
        """Run ``statement`` (a MERGE or UPDATE on ``{target}``) on a new branch."""
        self.attach(spark)
        target = env_writes.Target.of(self._load(table), self.env)
        summary = produced.summary(None)
        staged = tables.stage_sql(
            spark, table, statement, summary, refs=self._refs, base=target.base
        )
        staged = target.on(staged)
        return StagedWrite(staged, tables.read_staged(spark, staged))

    def publish(self, spark: SparkSession, staged: StagedWrite) -> Version:
        """Make the staged write current (one catalog commit), then expire the snapshots past
        the newest ``keep_versions`` (a day's current version is tagged and kept)."""
        self.attach(spark)
        if staged.write.target == "main":
            tables.publish(spark, staged.write, self._refs)
        else:
            env_writes.publish(staged.write, self._refs)
        snapshots.expire(spark, staged.write.table, self.keep_versions)
        published = self.current(staged.write.table, staged.write.partition)
        assert published is not None, f"{staged.write.table}: published but not current"
        return published

    def discard(self, spark: SparkSession, staged: StagedWrite) -> None:
        """Forget a staged write (its files go with the next orphan clean-up)."""
        self.attach(spark)
        self._refs.drop_branch(staged.write.table, staged.write.branch)

    def keep_rejected(self, spark: SparkSession, staged: StagedWrite) -> str:
        """Keep a write its checks rejected readable under a tag; returns where it is kept."""
        self.attach(spark)
        write = staged.write
        tag = tables.keep_rejected(write, write.partition or "table", self._refs)
        return f"{tables.identifier(write.table)} VERSION AS OF '{tag}'"

    def prepare(
        self, spark: SparkSession, table: str, columns: DataFrame, partition_column: str | None
    ) -> None:
        """Make ``table`` (when it does not exist) and add the columns of ``columns`` it lacks:
        before a SQL write (a MERGE) that can only write columns the table has."""
        self.attach(spark)
        columns = storable(columns)
        tables.ensure_table(spark, table, columns, partition_column, self._refs)
        tables.evolve(spark, table, columns)

    def schema(self, table: str) -> list[tuple[str, str]]:
        """The table's columns with their Iceberg types, read without a JVM; [] when the lake
        has no such table."""
        loaded = self._load(table)
        if loaded is None:
            return []
        return [(field.name, str(field.field_type)) for field in loaded.schema().fields]

    def columns(self, spark: SparkSession, table: str) -> list[str]:
        """The table's columns, in order."""
        self.attach(spark)
        return list(spark.table(tables.identifier(table)).columns)

    def clear_staging(self, table: str) -> int:
        """Drop the staging branches attempts killed before their publish left on ``table``
        (no JVM: the relaunch sensor heals without Spark); returns how many."""
        loaded = self._load(table)
        return drop_staging_branches(loaded) if loaded is not None else 0

    def drop_stale_staging(
        self, table: str, older_than_s: float = STALE_STAGING_S, dry_run: bool = False
    ) -> int:
        """Drop the staging branches of ``table`` made more than ``older_than_s`` ago: builds
        killed before their publish left them, each pinning an old snapshot that expiry could
        never remove. A build in progress made its own a moment ago. ``dry_run``: count them."""
        loaded = self._load(table)
        return drop_staging_branches(loaded, older_than_s, dry_run) if loaded is not None else 0

    def repair(self, table: str) -> tuple[str, str]:
        """Point the catalog at ``table``'s newest metadata file still there (``lake.repair``)."""
        return repair.repair(self._metadata, table)

    def orphans(self, table: str, older_than_s: float = SAFE_AGE_S) -> list[Orphan]:
        """Files under ``table``'s location nothing of it refers to (``lake.orphans``)."""
        loaded = self._load(table)
        return orphan_files(loaded, older_than_s) if loaded is not None else []

    def remove_orphans(self, table: str, found: list[Orphan]) -> int:
        """Delete ``found`` (from ``orphans``); returns the bytes freed."""
        loaded = self._load(table)
        return remove(loaded, found) if loaded is not None else 0

    def history(self, table: str, every: bool = False) -> list[versions.HistoryEntry]:
        """Newest first: ``main``'s snapshots; ``every``: also those rolled away from."""
        return versions.history(self._metadata, table, every) if self.exists() else []

    def rollback(
        self, spark: SparkSession, table: str, snapshot_id: int, partition: str | None = None
    ) -> Version:
        """Make the table (one day of a daily table) what it was at ``snapshot_id``; returns
        the version now current. A table's ``main`` moves back to the snapshot (one catalog
        commit). A day is rewritten with its rows as of the snapshot, recorded as built by
        what built them (the day's version then), so ``main`` and every engine reading it see
        the day rolled back, and other days keep theirs."""
        self.attach(spark)
        if partition is None:
            if self.is_partitioned(table):
                raise snapshots.UnknownSnapshot(
                    f"{table} is a daily table: name the day to roll back (--partition DAY)"
                )
            loaded = self._load(table)
            snapshot = loaded.snapshot_by_id(snapshot_id) if loaded is not None else None
            if snapshot is not None and versions.version_of(table, snapshot) is None:
                raise snapshots.UnknownSnapshot(
                    f"{table}: snapshot {snapshot_id} was not published by medallion (another "
                    "engine's commit or the table's empty first snapshot); nothing changed; see "
                    f"`medallion table history {table}`"
                )
            snapshots.rollback(spark, table, snapshot_id)  # UnknownSnapshot when it has none such
            current = self.current(table)
            assert current is not None, f"{table}: rolled back but nothing current"
            return current
        return rollback_day(self, spark, table, snapshot_id, partition)
