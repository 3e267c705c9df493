"""The demo pipeline on a Spark standalone cluster: a master and one worker on 127.0.0.1 started
from the pyspark package (tests/spark_cluster.py), a real `medallion run` process pointed at it
with MEDALLION_SPARK_MASTER, and every gold table equal to a local-mode run of the same raw data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from medallion_assets.adapters.headless import run_project
from medallion_assets.catalog import load_catalog
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.testing import read_table
from tests.conftest import copy_demo_project
from tests.e2e import reference
from tests.spark_cluster import SparkCluster, running_spark_cluster

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 300.0  # seconds; the cluster run takes ~90 s on a busy 2-core machine


def medallion_env(home: Path, s3_root: Path, master: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDALLION_")}
    env.pop("DAGSTER_HOME", None)
    env.update(
        MEDALLION_HOME=str(home),
        MEDALLION_S3_LOCAL_ROOT=str(s3_root),
        MEDALLION_SPARK_SHUFFLE_PARTITIONS="2",
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    if master is not None:
        env["MEDALLION_SPARK_MASTER"] = master
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


def test_the_demo_runs_on_a_standalone_cluster_and_its_gold_equals_a_local_run(
    tmp_path, spark, monkeypatch
):
    # Two copies of the project: the runs go on at the same time, each with its own caches.
    root = copy_demo_project(tmp_path / "cluster-project")
    local_root = copy_demo_project(tmp_path / "local-project")
    s3_root = tmp_path / "s3"
    catalog = load_catalog(root)
    # A clean vendor feed, so that every gold table builds and can be compared.
    clean = DemoSettings(rows=300, days=1, seed=7, vendor_uk_rate=0)
    write_files(generate(catalog, clean), LocalFolderObjectStore(s3_root))
    gold = sorted(n for n in catalog.datasets if n.startswith("gold."))
    assert gold

    cluster_home, local_home = tmp_path / "cluster-home", tmp_path / "local-home"
    with running_spark_cluster(tmp_path / "cluster") as cluster:
        medallion = str(Path(sys.executable).parent / "medallion")
        with (tmp_path / "cluster-run.log").open("w+") as output:
            # The cluster run is a process of its own; the local run goes on meanwhile, in this
            # process, on the tests' local session.
            process = subprocess.Popen(
                [medallion, "run", "--project", str(root)],
                env=medallion_env(cluster_home, s3_root, cluster.master_url),
                stdout=output,
                stderr=subprocess.STDOUT,
                text=True,
            )
            try:
                for name, value in medallion_env(local_home, s3_root, None).items():
                    monkeypatch.setenv(name, value)
                local = run_project(
                    local_root, log=lambda _m: None, instance=dg.DagsterInstance.ephemeral()
                )
                code = process.wait(timeout=RUN_TIMEOUT)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
            output.seek(0)
            printed = output.read()
        assert code == 0, printed[-4000:]
        assert f"{len(local.results)} built;" in printed, printed[-4000:]
        apps = completed_apps(cluster)

    # The master ran the application, and the worker ran its executor and tasks.
    assert [a["name"] for a in apps] == ["medallion_assets"], apps
    (app_dir,) = cluster.work_dir.iterdir()
    assert app_dir.name == apps[0]["id"]
    executor_log = "".join(p.read_text(errors="replace") for p in app_dir.glob("*/stderr"))
    assert "Finished task" in executor_log

    assert local.success
    assert {r.table for r in local.results if not r.skipped} == set(catalog.datasets)
    for table in gold:
        assert gold_rows(cluster_home, table) == gold_rows(local_home, table), table
