"""How a Spark session holds the lake: its catalog ``lake`` pointed at one lake's catalog
(a test run's one Spark serves many lakes, one after the other), and the catalog's own tables
created one process at a time."""

from __future__ import annotations

import fcntl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_assets.lake.catalog import SPARK_CATALOG, LakeCatalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def attach(catalog: LakeCatalog, spark: SparkSession) -> SparkSession:
    """Point ``spark``'s catalog ``lake`` at ``catalog`` (a no-op when this catalog attached it
    last; a Spark Connect session uses its server's catalog); returns ``spark``. The
    session's settings alone do not say which catalog it made: a session made with other
    settings, or given new ones since, made its ``lake`` from those."""
    with _ATTACH_LOCK:  # the run's Spark warm-up attaches it while its first step starts
        jsession = getattr(spark, "_jsparkSession", None)
        if jsession is None:  # Spark Connect: the server's catalog, first used one at a time
            return _initialized(catalog, spark)
        conf = catalog.spark_conf()
        own = {k: v for k, v in conf.items() if k.startswith(f"spark.sql.catalog.{SPARK_CATALOG}")}
        wanted = tuple(sorted(own.items()))
        if getattr(spark, "_medallion_lake", None) == wanted:
            return _initialized(catalog, spark)
        catalog.make_folder()
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()
        for key, value in conf.items():
            if key.startswith("spark.hadoop."):
                hadoop.set(key.removeprefix("spark.hadoop."), value)
        for key in [k for k in _catalog_keys(spark) if k not in own]:
            spark.conf.unset(key)
        for key, value in own.items():
            spark.conf.set(key, value)
        # The session made its catalog ``lake`` when first used: forget it, so the next use
        # makes it again from the settings above.
        jsession.sessionState().catalogManager().reset()
        spark._medallion_lake = wanted  # type: ignore[attr-defined]
        return _initialized(catalog, spark)


_ATTACH_LOCK = threading.RLock()


def _initialized(catalog: LakeCatalog, spark: SparkSession) -> SparkSession:
    """``spark`` once the catalog's own tables exist. Iceberg's JDBC catalog creates (and
    migrates) them when it is first used, which two processes starting together race at
    (``duplicate column name: iceberg_type``): the first use here is one at a time."""
    key = catalog.uri or catalog.warehouse
    if key in _INITIALIZED:
        return spark
    with _file_lock(catalog.sqlite_file):  # threads: ``attach``'s lock, which calls this
        spark.sql(f"SHOW NAMESPACES IN {SPARK_CATALOG}").collect()
    _INITIALIZED.add(key)
    return spark


_INITIALIZED: set[str] = set()  # catalogs this process has seen initialized


@contextmanager
def _file_lock(sqlite: Path | None) -> Iterator[None]:
    """An exclusive lock beside an embedded catalog's file, across processes (none for a
    catalog server, which serializes its own)."""
    if sqlite is None:
        yield
        return

    sqlite.parent.mkdir(parents=True, exist_ok=True)
    with open(sqlite.with_name(sqlite.name + ".init-lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _catalog_keys(spark: SparkSession) -> list[str]:
    """The session's settings of catalog ``lake`` (a previous lake's, to clear)."""
    prefix = f"spark.sql.catalog.{SPARK_CATALOG}."
    # The keys in one call: pyspark's ``conf.getAll`` asks py4j for each entry in turn, some
    # hundred round trips at every step's attach.
    keys = str(spark._jsparkSession.conf().getAll().keys().mkString("\n")).split("\n")
    return [k for k in keys if k.startswith(prefix)]
