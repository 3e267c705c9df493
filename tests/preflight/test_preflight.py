"""Preflight on real components: moto's S3 server on 127.0.0.1 (with the lake's bucket
missing, present, and behind a proxy answering 503 SlowDown), the embedded SQLite catalog and
DuckDB warehouse, through the ``medallion`` command a user types."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from medallion_assets.cli import cli
from tests.conftest import copy_demo_project
from tests.s3_server import S3Server
from tests.slowdown_proxy import slowdown_proxy

SECRET = "preflight-secret-key-7f3a"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The demo with no MEDALLION_* or AWS_* variable but its own state folder, and no AWS
    credentials anywhere the chain looks (no files, no instance metadata)."""
    import os

    for name in list(os.environ):
        if name.startswith(("MEDALLION_", "AWS_")) or name == "DAGSTER_HOME":
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    root = copy_demo_project(tmp_path / "theworldshop")
    monkeypatch.setenv("MEDALLION_HOME", str(root / ".medallion"))
    return root


@pytest.fixture
def on_s3(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch, project: Path) -> str:
    """The lake on S3 (a bucket of this test's, not created) with credentials in the
    environment; returns the bucket's name."""
    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("MEDALLION_S3_ENDPOINT", s3_server.endpoint_url)
    monkeypatch.setenv("MEDALLION_LAKE", f"s3://{bucket}/prod")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    return bucket


def medallion(project: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--project", str(project)])


def errors(result: Result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("error:")]


def test_a_missing_lake_bucket_stops_the_run_in_one_line_before_spark(project: Path, on_s3: str):
    started = time.monotonic()
    result = medallion(project, "run")
    took = time.monotonic() - started
    assert result.exit_code == 2, result.output
    (problem,) = errors(result)  # one line: the problem and its fix
    assert f"the lake's bucket s3://{on_s3}" in problem and "does not exist" in problem
    assert "MEDALLION_LAKE_CREATE=1" in problem and "MEDALLION_S3_ENDPOINT" in problem
    assert "Traceback" not in result.output and SECRET not in result.output
    assert not (project / ".medallion" / "logs" / "spark.log").exists()  # no driver started
    assert took < 10, f"preflight took {took:.1f} s"


def test_lake_create_makes_the_missing_bucket_and_checks_it_takes_writes(
    project: Path, on_s3: str, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("MEDALLION_LAKE_CREATE", "1")
    result = medallion(project, "doctor")
    assert result.exit_code == 0, result.output
    assert f"s3://{on_s3} (MEDALLION_LAKE=s3://{on_s3}/prod) was created" in result.output
    s3_server.client().head_bucket(Bucket=on_s3)  # there now
    listed = s3_server.client().list_objects_v2(Bucket=on_s3).get("Contents", [])
    assert listed == []  # the write probe removed its object


def test_without_credentials_the_run_names_the_fix_and_checks_no_bucket(
    project: Path, on_s3: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    result = medallion(project, "doctor")
    assert result.exit_code == 2
    failed = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and "no AWS credentials were found" in failed[0], result.output
    assert "AWS_ACCESS_KEY_ID" in failed[0]


def test_doctor_names_where_credentials_come_from_never_their_value(
    project: Path, on_s3: str, s3_server: S3Server
):
    s3_server.client().create_bucket(Bucket=on_s3)
    result = medallion(project, "doctor")
    assert result.exit_code == 0, result.output
    assert "AWS credentials from the environment (AWS_ACCESS_KEY_ID)" in result.output
    assert SECRET not in result.output and "testing" not in result.output
    assert "is there and takes writes" in result.output


def test_an_endpoint_that_does_not_answer_is_one_line_within_seconds(
    project: Path, on_s3: str, monkeypatch: pytest.MonkeyPatch
):
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    monkeypatch.setenv("MEDALLION_S3_ENDPOINT", f"http://127.0.0.1:{port}")
    started = time.monotonic()
    result = medallion(project, "run")
    assert result.exit_code == 2
    (problem,) = errors(result)  # said once, not once per bucket on that endpoint
    assert f"cannot reach the S3 endpoint http://127.0.0.1:{port}" in problem
    assert time.monotonic() - started < 10


def test_preflight_rides_out_s3_throttling(
    project: Path, on_s3: str, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
):
    s3_server.client().create_bucket(Bucket=on_s3)
    with slowdown_proxy(s3_server.endpoint_url, every=2) as proxy:
        monkeypatch.setenv("MEDALLION_S3_ENDPOINT", proxy.url)
        result = medallion(project, "doctor")
    assert proxy.throttled >= 2  # half the requests were answered 503 SlowDown
    assert result.exit_code == 0, result.output
    assert "takes writes" in result.output


def test_a_file_where_the_lake_folder_should_be_is_one_line(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("MEDALLION_LAKE", str(blocker / "lake"))
    monkeypatch.setenv("MEDALLION_LAKE_CATALOG", f"sqlite:///{tmp_path / 'catalog.db'}")
    result = medallion(project, "run")
    assert result.exit_code == 2
    (problem,) = errors(result)
    assert f"the lake's folder {blocker / 'lake'} (MEDALLION_LAKE) cannot be written" in problem


def test_a_damaged_catalog_file_is_named_with_how_to_recover(project: Path):
    catalog = project / ".medallion" / "lake" / "catalog.db"
    catalog.parent.mkdir(parents=True)
    catalog.write_bytes(b"this is not a SQLite database" * 100)
    result = medallion(project, "doctor")
    assert result.exit_code == 2
    failed = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert len(failed) == 1 and str(catalog) in failed[0], result.output
    assert "damaged" in failed[0] and "register" in failed[0]


@pytest.mark.slow  # weed mini starts in ~10 s
def test_a_rest_catalogs_bucket_is_checked_but_not_written(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
):
    """SeaweedFS's Iceberg REST catalog over its table bucket, which takes writes only where the
    catalog places tables (and may not answer S3's HEAD): preflight leaves the bucket to the
    catalog, and checks that the catalog answers."""
    from tests import seaweed_server

    folder = tmp_path / "seaweed"
    folder.mkdir()
    servers = seaweed_server.start(folder)
    seaweed = next(servers)
    try:
        for name, value in seaweed.env().items():
            monkeypatch.setenv(name, value)
        result = medallion(project, "doctor")
    finally:
        servers.close()
    assert result.exit_code == 0, result.output
    assert (
        "s3://lake (MEDALLION_LAKE=s3://lake): the catalog places its tables in it" in result.output
    )
    assert "answers" in result.output and seaweed_server.SECRET_KEY not in result.output


def test_a_warehouse_file_another_run_holds_is_no_fault(project: Path):
    """DuckDB's file takes one writer: a run waiting for the run lock must not fail preflight
    (nor print a traceback) because the run before it holds the warehouse open."""
    import subprocess
    import sys

    warehouse = project / ".medallion" / "warehouse.duckdb"
    warehouse.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
         "print('held', flush=True); time.sleep(120)", str(warehouse)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = medallion(project, "doctor")
    finally:
        holder.kill()
        holder.wait()
    assert result.exit_code == 0, result.output
    assert f"the warehouse duckdb:///{warehouse}: its folder takes writes" in result.output
