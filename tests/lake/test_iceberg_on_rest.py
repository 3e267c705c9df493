"""The lake in an Iceberg REST catalog (SeaweedFS's, with OAuth2 client credentials in the URL)
and the warehouse on that server's S3: a project runs through write-audit-publish there,
pyiceberg reads what Spark published, and the credentials never reach the output."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from medallion_assets.lake import versions
from medallion_assets.lake.catalog import LakeCatalog
from medallion_assets.settings import MedallionSettings
from tests import seaweed_server
from tests.seaweed_server import ACCESS_KEY, SECRET_KEY, Seaweed

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-c", "from medallion_assets.cli import main; main()"]


@pytest.fixture(scope="module")
def seaweed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seaweed]:
    yield from seaweed_server.start(tmp_path_factory.mktemp("seaweed"))


def _medallion(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(CLI + args, env=env, capture_output=True, text=True, timeout=600)


def test_a_project_runs_on_a_rest_catalog_and_pyiceberg_reads_its_tables(
    seaweed: Seaweed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEDALLION_", "AWS_"))}
    env = {**base, **seaweed.env(), "MEDALLION_HOME": str(tmp_path / "state")}
    project = tmp_path / "shop"
    assert _medallion(["init", str(project)], env).returncode == 0
    # The raw sample init wrote to the local stand-in goes to the server's S3, where the
    # project now reads raw objects.
    s3 = boto3.client(
        "s3", endpoint_url=seaweed.s3_url, region_name="us-east-1",
        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
    )  # fmt: skip
    stand_in = tmp_path / "state" / "s3"
    for path in stand_in.rglob("*"):
        if path.is_file():
            bucket, key = path.relative_to(stand_in).as_posix().split("/", 1)
            if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
                s3.create_bucket(Bucket=bucket)
            s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
    run = _medallion(["run", "--project", str(project)], env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "4 built" in run.stdout
    history = _medallion(["table", "history", "gold.daily_revenue", "--project", str(project)], env)
    assert history.returncode == 0, history.stderr
    for shown in (run.stdout, run.stderr, history.stdout, history.stderr):
        assert SECRET_KEY not in shown

    settings = MedallionSettings.from_env(env, project)
    lake = LakeCatalog.of(settings)
    assert (lake.kind, lake.uri) == ("rest", seaweed.catalog_url)
    for name, value in seaweed.env().items():
        if name.startswith("AWS_"):  # pyiceberg reads S3 with the AWS chain, as Spark does
            monkeypatch.setenv(name, value)
    catalog = versions.open_catalog(lake)
    rows = versions.read(catalog, "gold.daily_revenue").to_pylist()
    assert len(rows) == 5 and all(row["revenue"] > 0 for row in rows)
    table = catalog.load_table("gold.daily_revenue")
    assert table.metadata_location.startswith("s3://lake/")
    # Write-audit-publish: only main is left once each build published.
    assert set(table.metadata.refs) == {"main"} | {
        name for name in table.metadata.refs if name.startswith("medallion_day_")
    }
