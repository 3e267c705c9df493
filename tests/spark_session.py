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
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings

    # The environment's Spark variables are not the tests' business: defaults, 2 partitions.
    settings = MedallionSettings.from_env({"MEDALLION_SPARK_SHUFFLE_PARTITIONS": "2"})
    session = spark_session(settings)
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
