"""The demo pipeline on a Spark standalone cluster: a master and two workers on 127.0.0.1 started
from the pyspark package (tests/spark_cluster.py), each worker in a mount namespace where the
driver's folder (the project, its `.medallion/` state with the lake's catalog, Spark's jars) is
an empty tmpfs, as on hosts that share nothing with the driver but the network. A real
`medallion run` process is pointed at it with MEDALLION_SPARK_MASTER; raw data and the lake are
on a real S3 API (moto's server) through s3a, so the executors read raw objects and write the
tables themselves. Every gold table equals the independent DuckDB computation of the same raw
data (tests/e2e/reference.py, which the local-mode pipeline test compares against too).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.io.s3_store import Boto3ObjectStore
from medallion_assets.jvm.driver import QUICK_JIT
from medallion_assets.jvm.jars import MANIFEST, jar_folder
from medallion_assets.settings import MedallionSettings
from medallion_assets.testing import read_table
from tests.conftest import copy_demo_project
from tests.e2e import reference
from tests.spark_cluster import SparkCluster, running_spark_cluster

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 300.0  # seconds; the cluster run takes ~60-90 s on a busy 2-core machine


def medallion_env(s3_endpoint: str, master: str, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDALLION_")}
    env.pop("DAGSTER_HOME", None)
    env.update(
        more,
        MEDALLION_S3_ENDPOINT=s3_endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        MEDALLION_SPARK_SHUFFLE_PARTITIONS="2",
        MEDALLION_SPARK_MASTER=master,
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    return env


def completed_apps(cluster: SparkCluster, timeout: float = 30.0) -> list[dict[str, Any]]:
    """The master's completed applications, once there is one (the driver unregisters from its
    JVM shutdown hook, a moment after the `medallion run` process has exited)."""
    deadline = time.monotonic() + timeout
    while True:
        apps: list[dict[str, Any]] = cluster.state().get("completedapps", [])
        if apps or time.monotonic() > deadline:
            return apps
        time.sleep(0.5)


def driver_jars(folder: Path) -> Path:
    """This machine's Spark jars, hard-linked under ``folder`` (a path only the driver sees)."""
    source = jar_folder(MedallionSettings.from_env(dict(os.environ)).jars_folder)
    folder.mkdir(parents=True)
    for jar in source.jars:
        os.link(jar, folder / jar.name)
    shutil.copy(source.path / MANIFEST, folder / MANIFEST)
    return folder


def test_the_demo_runs_on_two_workers_that_cannot_see_the_driver_files_and_equals_the_reference(
    tmp_path, own_s3, monkeypatch
):
    s3_server = own_s3
    driver = tmp_path / "driver"  # what the workers cannot see
    lake_bucket = "cluster-lake"
    s3_server.client().create_bucket(Bucket=lake_bucket)
    env = medallion_env(
        s3_server.endpoint_url,
        "",
        MEDALLION_LAKE=f"s3://{lake_bucket}/lake",
        MEDALLION_SPARK_JARS=str(driver_jars(driver / "jars")),
    )
    for name, value in env.items():
        if name.startswith(("AWS_", "MEDALLION_")):
            monkeypatch.setenv(name, value)  # boto3 writes the raw data, read_table reads gold
    root = copy_demo_project(driver / "theworldshop")  # its state: the default .medallion/
    catalog = load_catalog(root)
    # A clean vendor feed, so that every gold table builds and can be compared.
    clean = DemoSettings(rows=300, days=1, seed=7, vendor_uk_rate=0)
    write_files(generate(catalog, clean), Boto3ObjectStore(s3_server.endpoint_url))
    gold = sorted(n for n in catalog.datasets if n.startswith("gold."))
    assert gold

    # The driver's and the executors' JVMs compile with C1 only, as medallion's local driver
    # does on a small machine (its own setting for the driver; Spark's defaults file, which
    # the driver's spark-submit reads, for the executors): C2 on these 2 cores slowed the run.
    defaults = tmp_path / "spark-conf"
    defaults.mkdir()
    (defaults / "spark-defaults.conf").write_text(f"spark.executor.extraJavaOptions {QUICK_JIT}\n")
    with running_spark_cluster(tmp_path / "cluster", workers=2, hide=driver) as cluster:
        medallion = str(Path(sys.executable).parent / "medallion")
        done = subprocess.run(
            [medallion, "run", "--project", str(root)],
            env={
                **env,
                "MEDALLION_SPARK_MASTER": cluster.master_url,
                "MEDALLION_SPARK_JIT": "quick",
                "SPARK_CONF_DIR": str(defaults),
            },
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        printed = done.stdout
        assert done.returncode == 0, printed[-4000:]
        assert f"{len(catalog.datasets)} built;" in printed, printed[-4000:]
        assert len(cluster.state()["workers"]) == 2
        apps = completed_apps(cluster)

    # The master ran the application, and each worker ran an executor that ran tasks.
    assert [a["name"] for a in apps] == ["medallion_assets"], apps
    (app_dir,) = cluster.work_dir.iterdir()
    assert app_dir.name == apps[0]["id"]
    executors = sorted(app_dir.iterdir())
    assert len(executors) == 2, executors
    for executor in executors:
        assert "Finished task" in (executor / "stderr").read_text(errors="replace"), executor
    assert not (root / ".medallion" / "lake").exists()  # the tables are on S3 only

    client = s3_server.client()
    expected, _malformed = reference.compute(catalog, client)
    for table in gold:
        want = reference.normalise(expected.execute(f"SELECT * FROM {table}").fetchall())
        frame = read_table(table, project=root)
        assert reference.normalise([tuple(r) for r in frame.itertuples(index=False)]) == want
