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


def test_the_code_location_shows_each_resources_settings_as_env_vars_never_values(
    demo_project, monkeypatch
):
    """Deployment > Resources lists what configures S3, the lake, the warehouse and Spark:
    a variable set in the environment appears by name (a URL with a password never by value),
    an unset one as unset; each is the project's own resource, none labelled as Dagster's."""
    from medallion_assets.adapters.code_location import build_definitions

    for name in variables():
        monkeypatch.delenv(name, raising=False)
    secret = "postgresql://etl:hunter2@warehouse.internal/analytics"
    monkeypatch.setenv("MEDALLION_WAREHOUSE_URL", secret)
    monkeypatch.setenv("MEDALLION_SPARK_MASTER", "local[1]")
    monkeypatch.setenv("MEDALLION_HOME", str(demo_project / ".medallion"))
    defs = build_definitions(demo_project)
    resources = defs.resources or {}
    for resource in resources.values():
        assert isinstance(resource, dg.ConfigurableResource)
        assert not resource._is_dagster_maintained(), type(resource)  # the UI's "Dagster" label
    assert isinstance(resources["warehouse"].warehouse_url, dg.EnvVar)
    assert resources["warehouse"].warehouse_url.env_var_name == "MEDALLION_WAREHOUSE_URL"
    assert resources["spark"].spark_master.env_var_name == "MEDALLION_SPARK_MASTER"
    assert resources["s3"].s3_endpoint is None and resources["lake"].lake_location is None
    # What the UI shows: each resource's configured values as the code location serves them.
    top = defs.get_repository_def().get_top_level_resources()
    shown = {key: top[key].config_schema.as_field().default_value for key in top}
    assert shown["warehouse"]["warehouse_url"] == {"env": "MEDALLION_WAREHOUSE_URL"}
    assert "hunter2" not in repr(shown)
    # The resource uses the variable's value when the run (or a tool) reads it.
    assert resources["warehouse"].url() == secret
    assert resources["spark"].settings.spark_master == "local[1]"


def test_a_field_given_in_the_launchpad_wins_over_the_environment(tmp_path, monkeypatch):
    for name in variables():
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEDALLION_WAREHOUSE_URL", "duckdb:///from-env.duckdb")
    resource = WarehouseResource(
        project_root=str(tmp_path), throttles={}, warehouse_url="duckdb:///given.duckdb"
    )
    assert resource.url() == "duckdb:///given.duckdb"


def test_the_spark_resource_weighs_its_pools_from_profiles_yaml_not_a_second_project_load(
    demo_project, monkeypatch
):
    """The code location has loaded the project; the Spark driver's pool weights read only
    metadata/profiles.yaml."""
    from medallion_assets.catalog import load_catalog, loader
    from medallion_assets.runtime.spark_session import pool_weights

    expected = pool_weights(load_catalog(demo_project, use_cache=False).profiles)

    def refused(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the project was loaded again")

    monkeypatch.setattr(loader, "discover_sql", refused)  # what every project load reads first
    spark = SparkResource(project_root=str(demo_project))
    assert spark.pool_weights() == expected
    assert expected["critical"] > expected["low"]  # the demo's profile ranks them
