"""A Spark session on a lake of its own: Iceberg's JDBC catalog on SQLite, warehouse in a
folder (the embedded default), over the test run's one Spark."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from medallion_assets.lake.catalog import LakeCatalog, S3Endpoint


def lake_session(spark: Any, lake: LakeCatalog) -> Any:
    """A session of ``spark`` whose catalog ``lake`` is ``lake``: catalogs load per session,
    from the conf the session has when it first uses one."""
    from medallion_assets.lake.refs import Refs
    from medallion_assets.lake.versions import open_catalog

    session = spark.newSession()
    session.medallion_refs = Refs(open_catalog(lake))  # what a Lake passes its writes
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in lake.spark_conf().items():
        if key.startswith("spark.hadoop."):
            hadoop.set(key.removeprefix("spark.hadoop."), value)
        else:
            session.conf.set(key, value)
    return session


@pytest.fixture
def local_lake(tmp_path: Path) -> LakeCatalog:
    return LakeCatalog.parse(f"sqlite:///{tmp_path}/lake_catalog.db", str(tmp_path / "lake"))


@pytest.fixture
def lake_spark(spark: Any, local_lake: LakeCatalog) -> Iterator[Any]:
    yield lake_session(spark, local_lake)


def moto_endpoint(url: str) -> S3Endpoint:
    return S3Endpoint(url, "us-east-1")
