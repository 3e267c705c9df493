"""The lake on a Spark standalone cluster whose two workers share nothing with the driver but
the network: each runs in a mount namespace where the driver's folder (the catalog, the jars)
is an empty tmpfs. The executors write the table's files to S3 (moto's server, through s3a);
the driver commits to the catalog; pyiceberg reads the same rows back without a JVM."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from medallion_assets.jvm.jars import MANIFEST, jar_folder
from medallion_assets.lake import versions
from medallion_assets.lake.catalog import LakeCatalog, S3Endpoint
from medallion_assets.settings import MedallionSettings
from tests.s3_server import S3Server
from tests.spark_cluster import running_spark_cluster

pytestmark = pytest.mark.slow

DRIVER = r"""
import json, sys
from pathlib import Path
from pyspark.sql import SparkSession
from medallion_assets.lake import tables, versions
from medallion_assets.lake.catalog import LakeCatalog, S3Endpoint

master, jars, catalog, warehouse, endpoint = sys.argv[1:6]
lake = LakeCatalog.parse(catalog, warehouse, S3Endpoint(endpoint, "us-east-1"))
builder = SparkSession.builder.master(master).config("spark.jars", jars)
builder = builder.config("spark.ui.enabled", "false").config("spark.executor.memory", "512m")
for key, value in lake.spark_conf().items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
frame = spark.range(0, 20000, numPartitions=4).selectExpr("id", "id % 7 AS k")
props = {"run-id": "c1"}
refs = tables.Refs(versions.open_catalog(lake))
staged = tables.stage(
    spark, frame, "silver.on_cluster", mode="replace", properties=props, refs=refs
)
before = spark.table(tables.identifier("silver.on_cluster")).count()
tables.publish(spark, staged, refs)
published = spark.table(tables.identifier("silver.on_cluster"))
after = published.selectExpr("count(*)", "sum(id)").first()
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
print(json.dumps({"before": before, "rows": after[0], "sum": after[1], "executors": executors}))
spark.stop()
"""


def test_executors_on_hosts_without_the_drivers_files_write_and_read_the_lake_on_s3(
    tmp_path: Path, own_s3: S3Server, monkeypatch: pytest.MonkeyPatch
):
    driver_home = tmp_path / "driver"  # what the workers cannot see
    jars = driver_home / "jars"
    source = jar_folder(MedallionSettings.from_env(dict(os.environ)).jars_folder)
    jars.mkdir(parents=True)
    for jar in source.jars:
        os.link(jar, jars / jar.name)  # the same bytes, under a path only the driver sees
    shutil.copy(source.path / MANIFEST, jars / MANIFEST)
    bucket = f"lake-{uuid.uuid4().hex[:8]}"
    own_s3.client().create_bucket(Bucket=bucket)
    catalog = f"sqlite:///{driver_home}/lake_catalog.db"
    warehouse = f"s3://{bucket}/warehouse"
    # Every host's AWS credential chain finds credentials (here its environment, as an
    # instance role would): the workers' daemons and executors inherit them, none is a setting.
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        monkeypatch.setenv(name, value)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    with running_spark_cluster(tmp_path / "cluster", workers=2, hide=driver_home) as cluster:
        done = subprocess.run(
            [
                sys.executable, "-c", DRIVER, cluster.master_url,
                ",".join(str(jars / j.name) for j in source.jars),
                catalog, warehouse, own_s3.endpoint_url,
            ],
            capture_output=True, text=True, env=env, cwd=driver_home, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert len(cluster.state()["workers"]) == 2
    assert result == {"before": 0, "rows": 20000, "sum": sum(range(20000)), "executors": 2}
    lake = LakeCatalog.parse(catalog, warehouse, S3Endpoint(own_s3.endpoint_url, "us-east-1"))
    arrow = versions.read(versions.open_catalog(lake), "silver.on_cluster")
    assert arrow.num_rows == 20000 and sum(arrow.column("id").to_pylist()) == sum(range(20000))
