"""One real local Spark session per test run (a session takes ~5 s to start)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from medallion_assets.runtime.spark_session import SparkSettings, spark_session

    session = spark_session(SparkSettings(shuffle_partitions=2))
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
