"""The demo pipeline through Spark Connect: a server started from the pyspark package with the
lake's jars and catalog on it (tests/spark_connect_server.py), a real `medallion run` process
with MEDALLION_SPARK_REMOTE and no JVM of its own, raw data on a real S3 API (moto's server)
that the server reads through s3a. Every gold table equals the independent DuckDB computation
of the same raw data (tests/e2e/reference.py, which the local-mode pipeline test compares
against too), read back through the lake's catalog with pyiceberg; a second run skips every
table.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.io.s3_store import Boto3ObjectStore
from medallion_assets.testing import read_table
from tests.conftest import copy_demo_project
from tests.e2e import reference
from tests.e2e.test_standalone_cluster import RUN_TIMEOUT, medallion_env
from tests.spark_connect_server import running_spark_connect_server

pytestmark = pytest.mark.slow


def medallion_run(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    medallion = str(Path(sys.executable).parent / "medallion")
    return subprocess.run(
        [medallion, "run", "--project", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=RUN_TIMEOUT,
    )


def test_the_demo_runs_through_spark_connect_and_equals_the_reference(
    tmp_path, own_s3, monkeypatch
):
    root = copy_demo_project(tmp_path / "theworldshop")
    catalog = load_catalog(root)
    with running_spark_connect_server(tmp_path / "server", own_s3.endpoint_url) as server:
        env = medallion_env(
            own_s3.endpoint_url,
            "",
            MEDALLION_SPARK_REMOTE=server.url,
            MEDALLION_LAKE=str(server.lake),
        )
        for name, value in env.items():
            if name.startswith(("AWS_", "MEDALLION_")):
                monkeypatch.setenv(name, value)  # boto3 writes the raw data, read_table reads
        clean = DemoSettings(rows=300, days=1, seed=11, vendor_uk_rate=0)
        write_files(generate(catalog, clean), Boto3ObjectStore(own_s3.endpoint_url))
        done = medallion_run(root, env)
        assert done.returncode == 0, done.stdout[-4000:]
        assert f"{len(catalog.datasets)} built;" in done.stdout, done.stdout[-4000:]
        again = medallion_run(root, env)
        assert again.returncode == 0, again.stdout[-4000:]
        unchanged = f"nothing changed: {len(catalog.datasets)} unchanged;"
        assert unchanged in again.stdout, again.stdout[-3000:]
    assert "Traceback" not in done.stdout + again.stdout

    expected, _malformed = reference.compute(catalog, own_s3.client())
    gold = sorted(n for n in catalog.datasets if n.startswith("gold."))
    assert gold
    for table in gold:
        want = reference.normalise(expected.execute(f"SELECT * FROM {table}").fetchall())
        frame = read_table(table, project=root)
        assert reference.normalise([tuple(r) for r in frame.itertuples(index=False)]) == want
