"""The run's resources read the settings once, when the run sets them up: a variable changed
while the run goes on does not reach it (every method uses what was read), the next run reads
it anew, and the build lock of a real step waits as long as the settings said at set-up."""

# no "from __future__ import annotations": Dagster reads the hints

import os
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.resources import (
    ControlResource,
    LakeResource,
    S3Resource,
    SparkResource,
    WarehouseResource,
)
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.settings import variables


def what_the_resources_use(resources) -> dict[str, object]:
    raw = resources.s3.raw_store()
    assert isinstance(raw, LocalFolderObjectStore)
    return {
        "lake": resources.lake.lake.root,
        "keep": resources.lake.lake.keep_versions,
        "s3": raw.root,
        "throttled_s3": resources.s3.store("s3_raw").store.root,
        "warehouse": resources.warehouse.url(),
        "control": resources.control.plane().url,
        "spark_master": resources.spark.settings.spark_master,
        "lock_wait": resources.lake.settings.lock_wait_seconds,
    }


def settings_env(home: Path) -> dict[str, str]:
    return {
        "MEDALLION_HOME": str(home),
        "MEDALLION_KEEP_VERSIONS": "4",
        "MEDALLION_SPARK_MASTER": f"local[{len(home.name)}]",
        "MEDALLION_LOCK_WAIT_SECONDS": str(len(home.name)),
    }


@pytest.fixture
def resources(tmp_path, monkeypatch) -> dict[str, dg.ConfigurableResource]:
    for name in variables():
        monkeypatch.delenv(name, raising=False)
    root = str(tmp_path / "project")
    return {
        "spark": SparkResource(project_root=root),
        "control": ControlResource(project_root=root),
        "lake": LakeResource(project_root=root),
        "s3": S3Resource(project_root=root, throttles={}),
        "warehouse": WarehouseResource(project_root=root, throttles={}),
    }


def test_a_variable_changed_during_a_run_does_not_reach_it_the_next_run_reads_it(
    tmp_path, monkeypatch, resources
):
    seen: list[dict[str, object]] = []
    later = tmp_path / "later-home"

    @dg.asset(required_resource_keys=set(resources))
    def probe(context: dg.AssetExecutionContext) -> None:
        before = what_the_resources_use(context.resources)
        for name, value in settings_env(later).items():
            os.environ[name] = value  # monkeypatch restores them
        seen.append(before)
        seen.append(what_the_resources_use(context.resources))

    first = tmp_path / "home"
    for name, value in settings_env(first).items():
        monkeypatch.setenv(name, value)
    assert dg.materialize([probe], resources=resources).success
    assert dg.materialize([probe], resources=resources).success

    during, after_change, next_run = seen[0], seen[1], seen[2]
    assert during == after_change  # the change made during the run did not reach it
    assert during == {
        "lake": first / "lake",
        "keep": 4,
        "s3": first / "s3",
        "throttled_s3": first / "s3",
        "warehouse": f"duckdb:///{first}/warehouse.duckdb",
        "control": f"sqlite:///{first}/control.db",
        "spark_master": "local[4]",
        "lock_wait": 4.0,
    }
    assert next_run["lake"] == later / "lake" and next_run["control"].endswith(
        "later-home/control.db"
    )
    assert (next_run["spark_master"], next_run["lock_wait"]) == ("local[10]", 10.0)


def test_a_bad_setting_fails_the_run_at_set_up_naming_the_variable(monkeypatch, resources):
    @dg.asset(required_resource_keys={"lake"})
    def probe(context: dg.AssetExecutionContext) -> None:
        raise AssertionError("the step must not start")

    monkeypatch.setenv("MEDALLION_KEEP_VERSIONS", "none")
    result = dg.materialize([probe], resources=resources, raise_on_error=False)
    assert not result.success
    error = result.get_run_failure_event().job_failure_data.error.to_string()
    assert "MEDALLION_KEEP_VERSIONS='none' is not valid: set it to a whole number" in error
    assert "the step must not start" not in error
