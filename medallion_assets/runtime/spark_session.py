"""Build the Spark session: local ``local[*]`` by default, a master URL or a Spark Connect URL.

Settings come from the environment mapping given when the resource is built, never from
import-time reads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class SparkSettings:
    master: str = "local[*]"
    remote: str | None = None  # Spark Connect, e.g. "sc://127.0.0.1:15002"
    shuffle_partitions: int = 4  # a few partitions suit the demo's size on a small machine
    driver_memory: str = "2g"
    app_name: str = "medallion_assets"
    # Where the driver JVM's console output (banners, log4j warnings, Java traces) goes instead
    # of the terminal; `medallion run` points it at $MEDALLION_HOME/logs/spark.log.
    console_log: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SparkSettings:
        return cls(
            master=env.get("MEDALLION_SPARK_MASTER", "local[*]"),
            remote=env.get("MEDALLION_SPARK_REMOTE") or None,
            shuffle_partitions=int(env.get("MEDALLION_SPARK_SHUFFLE_PARTITIONS", "4")),
            driver_memory=env.get("MEDALLION_SPARK_DRIVER_MEMORY", "2g"),
            console_log=env.get("MEDALLION_SPARK_LOG") or None,
        )


def spark_session(settings: SparkSettings) -> SparkSession:
    """Get or create the process's Spark session for these settings."""
    # Workers must run the interpreter that has pyspark and the project installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(settings.app_name)
    if settings.remote:
        builder = builder.remote(settings.remote)
    else:
        builder = (
            builder.master(settings.master)
            .config("spark.driver.memory", settings.driver_memory)
            .config("spark.ui.enabled", "false")
            # Stage progress bars would interleave with the run's own lines and logs.
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
        )
    builder = builder.config("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
    with _console_to(settings.console_log if not settings.remote else None):
        session = builder.getOrCreate()
    session.conf.set("spark.sql.session.timeZone", "UTC")
    return session


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
