"""The demo pipeline on a Spark standalone cluster: a master and one worker on 127.0.0.1 started
from the pyspark package (tests/spark_cluster.py), a real `medallion run` process pointed at it
with MEDALLION_SPARK_MASTER over raw data on a real S3 API (moto's server), and every gold
table equal to the independent DuckDB computation of the same raw data (tests/e2e/reference.py,
which the local-mode pipeline test compares against too).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.io.object_store import Boto3ObjectStore
from medallion_assets.testing import read_table
from tests.conftest import copy_demo_project
from tests.e2e import reference
from tests.spark_cluster import SparkCluster, running_spark_cluster

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 300.0  # seconds; the cluster run takes ~60-90 s on a busy 2-core machine


def medallion_env(home: Path, s3_endpoint: str, master: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDALLION_")}
    env.pop("DAGSTER_HOME", None)
    env.update(
        MEDALLION_HOME=str(home),
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


def gold_rows(home: Path, table: str) -> list[tuple[Any, ...]]:
    frame = read_table(table, lake_root=home / "lake")
    return reference.normalise([tuple(r) for r in frame.itertuples(index=False)])


def test_the_demo_runs_on_a_standalone_cluster_and_its_gold_equals_the_reference(
    tmp_path, own_s3, monkeypatch
):
    s3_server = own_s3
    for name, value in medallion_env(tmp_path, s3_server.endpoint_url, "").items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)  # boto3 in this process writes the raw data
    root = copy_demo_project(tmp_path / "cluster-project")
    catalog = load_catalog(root)
    # A clean vendor feed, so that every gold table builds and can be compared.
    clean = DemoSettings(rows=300, days=1, seed=7, vendor_uk_rate=0)
    write_files(generate(catalog, clean), Boto3ObjectStore(s3_server.endpoint_url))
    gold = sorted(n for n in catalog.datasets if n.startswith("gold."))
    assert gold

    home = tmp_path / "cluster-home"
    with running_spark_cluster(tmp_path / "cluster") as cluster:
        medallion = str(Path(sys.executable).parent / "medallion")
        done = subprocess.run(
            [medallion, "run", "--project", str(root)],
            env=medallion_env(home, s3_server.endpoint_url, cluster.master_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        printed = done.stdout
        assert done.returncode == 0, printed[-4000:]
        assert f"{len(catalog.datasets)} built;" in printed, printed[-4000:]
        apps = completed_apps(cluster)

    # The master ran the application, and the worker ran its executor and tasks.
    assert [a["name"] for a in apps] == ["medallion_assets"], apps
    (app_dir,) = cluster.work_dir.iterdir()
    assert app_dir.name == apps[0]["id"]
    executor_log = "".join(p.read_text(errors="replace") for p in app_dir.glob("*/stderr"))
    assert "Finished task" in executor_log

    client = s3_server.client()
    expected, _malformed = reference.compute(catalog, client)
    for table in gold:
        want = reference.normalise(expected.execute(f"SELECT * FROM {table}").fetchall())
        assert gold_rows(home, table) == want, table
