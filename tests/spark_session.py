"""One real local Spark session per test run (a session takes ~5 s to start).

Its s3a file system speaks to the run's moto server (``s3_server``), as a session started by
``medallion run`` speaks to ``MEDALLION_S3_ENDPOINT``: ingest has Spark read raw objects from
S3 itself. The driver JVM finds the test credentials in its environment (the AWS chain);
they are set only while it starts, so no test sees them unless it asks (``s3_env``).
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.s3_server import REGION, S3Server


@pytest.fixture(scope="session")
def spark(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from medallion_assets.runtime.spark_session import fair_pools, pool_weights, spark_session
    from medallion_assets.settings import MedallionSettings

    # The environment's Spark variables are not the tests' business: defaults, 2 partitions.
    settings = MedallionSettings.from_env(
        {"MEDALLION_SPARK_SHUFFLE_PARTITIONS": "2", "MEDALLION_S3_ENDPOINT": s3_server.endpoint_url}
    )
    credentials = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": REGION,
    }
    saved = {name: os.environ.get(name) for name in credentials}
    os.environ.update(credentials)
    try:
        # The pools a run declares (one per criticality), in a folder of this test run's.
        pools = fair_pools(tmp_path_factory.mktemp("spark-pools"), pool_weights(None))
        session = spark_session(settings, conf={"spark.scheduler.allocation.file": str(pools)})
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
