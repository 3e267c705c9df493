"""Build the Spark session: local ``local[*]`` by default, a master URL or a Spark Connect URL.

Settings come from the environment mapping given when the resource is built, never from
import-time reads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SparkSettings:
    master: str = "local[*]"
    remote: str | None = None  # Spark Connect, e.g. "sc://127.0.0.1:15002"
    shuffle_partitions: int = 4  # a few partitions suit the demo's size on a small machine
    driver_memory: str = "2g"
    app_name: str = "medallion_assets"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SparkSettings:
        return cls(
            master=env.get("MEDALLION_SPARK_MASTER", "local[*]"),
            remote=env.get("MEDALLION_SPARK_REMOTE") or None,
            shuffle_partitions=int(env.get("MEDALLION_SPARK_SHUFFLE_PARTITIONS", "4")),
            driver_memory=env.get("MEDALLION_SPARK_DRIVER_MEMORY", "2g"),
        )


def spark_session(settings: SparkSettings) -> Any:
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
            .config("spark.sql.session.timeZone", "UTC")
        )
    builder = builder.config("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
    session = builder.getOrCreate()
    session.conf.set("spark.sql.session.timeZone", "UTC")
    return session
