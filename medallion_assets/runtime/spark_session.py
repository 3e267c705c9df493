"""Build the Spark session: local ``local[*]`` by default, a master URL or a Spark Connect URL.

Its settings come from the run's ``MedallionSettings`` (read when the resource is set up), never
from import-time reads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from medallion_assets.settings import MedallionSettings


APP_NAME = "medallion_assets"


def spark_session(
    settings: MedallionSettings, pool_weights: Mapping[str, int] | None = None
) -> SparkSession:
    """Get or create the process's Spark session for these settings: ``spark_remote`` (Spark
    Connect) when set, else ``spark_master``. The driver JVM's console output (banners, log4j
    warnings, Java traces) goes to ``spark_log`` when set instead of the terminal.
    ``pool_weights`` (a FAIR scheduler pool per criticality, e.g. ``{"critical": 3, "low": 1}``)
    take effect when this call starts the Spark driver: a critical table's jobs then get a
    larger share of the executors than a low one's while both run."""
    # Workers must run the interpreter that has pyspark and the project installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(APP_NAME)
    if settings.spark_remote:
        builder = builder.remote(settings.spark_remote)
    else:
        builder = (
            builder.master(settings.spark_master)
            .config("spark.driver.memory", settings.spark_driver_memory)
            .config("spark.ui.enabled", "false")
            # Stage progress bars would interleave with the run's own lines and logs.
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            # Steps of a run share the executors (adapters/threads.py): FAIR, not first come.
            .config("spark.scheduler.mode", "FAIR")
        )
        if pool_weights:
            allocation = fair_pools(settings.state_home / "spark", pool_weights)
            builder = builder.config("spark.scheduler.allocation.file", str(allocation))
    partitions = str(settings.spark_shuffle_partitions)
    builder = builder.config("spark.sql.shuffle.partitions", partitions)
    log = settings.spark_log if not settings.spark_remote else None
    with _console_to(None if log is None else str(log)):
        session = builder.getOrCreate()
    session.conf.set("spark.sql.session.timeZone", "UTC")
    return session


def fair_pools(folder: Path, weights: Mapping[str, int]) -> Path:
    """Write Spark's FAIR scheduler allocation file with one pool per name; a weight below 1 is
    1 (a pool of weight 0 would only run when no other pool wants the executors)."""
    pools = "".join(
        f'  <pool name="{escape(name)}"><schedulingMode>FIFO</schedulingMode>'
        f"<weight>{max(1, weight)}</weight><minShare>0</minShare></pool>\n"
        for name, weight in sorted(weights.items())
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "fairscheduler.xml"
    path.write_text(f'<?xml version="1.0"?>\n<allocations>\n{pools}</allocations>\n')
    return path


@contextmanager
def _console_to(path: str | None) -> Iterator[None]:
    """Start the driver JVM with its stderr on ``path``: the JVM inherits file descriptor 2 when
    it is launched, so pointing it at the file just for the launch keeps every later JVM line
    there, while Python's own stderr is restored at once. Nothing to do when a session (and so
    the JVM) already exists or no path is given."""
    from pyspark import SparkContext

    if path is None or SparkContext._active_spark_context is not None:
        yield
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(path, "ab") as log:
            os.dup2(log.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def step_session(base: SparkSession, settings: MedallionSettings, pool: str) -> SparkSession:
    """A session of one step over ``base``'s Spark: its own temp views and SQL settings (the
    views a table's SQL registers, its preamble's SET lines), the same SparkContext or Spark
    Connect server, so steps on parallel threads never see each other's names. Spark jobs the
    calling thread starts go to the FAIR scheduler pool ``pool``."""
    if settings.spark_remote:
        from pyspark.sql import SparkSession

        session = SparkSession.builder.remote(settings.spark_remote).create()
    else:
        session = base.newSession()
        session.sparkContext.setLocalProperty("spark.scheduler.pool", pool)
    session.conf.set("spark.sql.session.timeZone", "UTC")
    session.conf.set("spark.sql.shuffle.partitions", str(settings.spark_shuffle_partitions))
    return session
