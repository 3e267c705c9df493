"""Runs launched through Dagster: a backfill over three days, and the new-object sensors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.resources import ControlResource, LakeResource, S3Resource
from medallion_assets.adapters.sensors import build_sensors
from medallion_assets.catalog import load_catalog
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.lake import Lake
from medallion_assets.runtime.ingest.bronze_ingest import ingest
from medallion_assets.runtime.table_run import TableRun
from medallion_assets.testing import read_table
from tests.conftest import copy_demo_project

pytestmark = pytest.mark.slow

DAYS = ["2026-01-01", "2026-01-02", "2026-01-03"]
DAILY = ["bronze/user_events", "silver/user_events", "gold/daily_user_events"]


@pytest.fixture
def project(tmp_path: Path):
    root = copy_demo_project(tmp_path / "theworldshop")
    catalog = load_catalog(root)
    files = generate(catalog, DemoSettings(rows=200, days=3, seed=11))
    write_files(files, LocalFolderObjectStore(root / ".medallion" / "s3"))
    return root, catalog, files


def test_a_backfill_of_three_days_builds_each_partition(project, tmp_path: Path):
    root, _, files = project
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "MEDALLION_PROJECT": str(root),
        "MEDALLION_HOME": str(root / ".medallion"),
    }
    dagster = Path(sys.executable).parent / "dagster"
    result = subprocess.run(
        [
            str(dagster),
            "asset",
            "materialize",
            "-m",
            "medallion_assets.definitions",
            "--select",
            ",".join(DAILY),
            "--partition-range",
            f"{DAYS[0]}...{DAYS[-1]}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # Spark's own lines go to its log under the project's state, not the console, and every
    # FAIR pool a step uses is declared (the demo's profiles, or one per criticality)
    assert "log4j" not in result.stderr and "FairSchedulableBuilder" not in result.stderr
    assert "log4j" in (root / ".medallion" / "logs" / "spark.log").read_text()

    lake = Lake.local(root / ".medallion" / "lake")
    for table in ("bronze.user_events", "silver.user_events", "gold.daily_user_events"):
        assert lake.partitions(table) == DAYS, table
    events = {f.key: f for f in files if f.key.startswith("user_events/")}
    for day in DAYS:
        (raw,) = [f for key, f in events.items() if f"dt={day}/" in key]
        bronze = lake.current("bronze.user_events", day)
        assert bronze.rows == raw.rows, day  # every well-formed record of that day, once
    daily = read_table("gold.daily_user_events", lake_root=lake.root)
    assert sorted(daily["event_date"].astype(str).unique()) == DAYS


def _sensor_context(root: Path, home: Path) -> dg.SensorEvaluationContext:
    catalog = load_catalog(root)
    throttles = {n: s.throttle.model_dump() for n, s in catalog.systems.items()}
    resources = {
        "s3": S3Resource(project_root=str(root), throttles=throttles),
        "lake": LakeResource(project_root=str(root)),
        "control": ControlResource(project_root=str(root)),
    }
    return dg.build_sensor_context(resources=resources)


def test_sensors_request_bronze_for_new_objects_only(project, spark, monkeypatch):
    root, catalog, _ = project
    monkeypatch.setenv("MEDALLION_HOME", str(root / ".medallion"))
    sensors = {s.name: s for s in build_sensors(catalog)}

    events = sensors["new_objects__user_events"](_sensor_context(root, root / ".medallion"))
    assert sorted(r.partition_key for r in events.run_requests) == DAYS
    assert all(
        r.asset_selection == [dg.AssetKey(["bronze", "user_events"])] for r in events.run_requests
    )

    orders = sensors["new_objects__orders"](_sensor_context(root, root / ".medallion"))
    assert [r.partition_key for r in orders.run_requests] == [None]

    store = LocalFolderObjectStore(root / ".medallion" / "s3")
    lake = Lake.local(root / ".medallion" / "lake")
    ingest(
        TableRun(
            spark=spark,
            lake=lake,
            catalog=catalog,
            dataset=catalog.datasets["bronze.orders"],
            control=ControlResource(project_root=str(root)).plane().store(),
        ),
        store,
    )
    assert (
        sensors["new_objects__orders"](_sensor_context(root, root / ".medallion")).run_requests
        == []
    )

    source = catalog.sources["orders"]
    store.put(source.bucket, f"{source.prefix}batch=0099/late.jsonl", b'{"order_id": 1}\n')
    late = sensors["new_objects__orders"](_sensor_context(root, root / ".medallion"))
    assert len(late.run_requests) == 1


def test_a_sensor_before_any_delivery_skips_instead_of_erroring(tmp_path: Path, monkeypatch):
    root = copy_demo_project(tmp_path / "empty")  # no raw data: the buckets do not exist yet
    monkeypatch.setenv("MEDALLION_HOME", str(root / ".medallion"))
    sensors = {s.name: s for s in build_sensors(load_catalog(root))}

    result = sensors["new_objects__orders"](_sensor_context(root, root / ".medallion"))

    assert result.run_requests == [] and "no raw data yet" in result.skip_reason.skip_message
    assert "theworldshop-raw does not exist" in result.skip_reason.skip_message
