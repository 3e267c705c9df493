"""`medallion run` records its runs in a persistent Dagster instance: $DAGSTER_HOME, else the
project's own <project>/.medallion/dagster, so the README's `dagster dev` shows them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from medallion_assets.adapters.instance import dagster_home, project_instance
from medallion_assets.catalog import load_catalog
from medallion_assets.cli import cli
from tests.adapters.minimal import minimal_project
from tests.adapters.queue_project import PROFILES
from tests.webserver import running_webserver, server_env

RUNS = "{ runsOrError { ... on Runs { results { runId status tags { key value } } } } }"


def test_the_instance_folder_is_dagster_home_else_the_projects_own(tmp_path: Path):
    assert dagster_home(tmp_path, {}) == tmp_path.resolve() / ".medallion" / "dagster"
    # another state folder (another lake): its own instance, its runs apart
    state = tmp_path / "s3-state"
    assert dagster_home(tmp_path, {"MEDALLION_HOME": str(state)}) == state.resolve() / "dagster"
    assert dagster_home(tmp_path, {"DAGSTER_HOME": str(tmp_path / "h")}) == tmp_path / "h"


def test_a_new_instance_folder_gets_the_projects_settings_and_keeps_an_operators(tmp_path: Path):
    with project_instance(tmp_path, {}):
        pass
    settings = yaml.safe_load((dagster_home(tmp_path, {}) / "dagster.yaml").read_text())
    assert settings["telemetry"] == {"enabled": False}
    assert settings["nux"] == {"enabled": False}  # the UI's first-open pop-up

    home = tmp_path / "operator"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: true\n")
    with project_instance(tmp_path, {"DAGSTER_HOME": str(home)}) as instance:
        assert Path(instance.root_directory) == home
    assert (home / "dagster.yaml").read_text() == "telemetry:\n  enabled: true\n"


def test_the_project_instance_queues_runs_by_priority_within_the_profiles_limits(
    tmp_path: Path, demo_catalog
):
    from dagster._core.run_coordinator import QueuedRunCoordinator

    profiles = demo_catalog.profiles  # balanced: 6 concurrent runs, focus: 10
    cluster = {"MEDALLION_SPARK_MASTER": "spark://127.0.0.1:7077"}  # not this machine's cores
    with project_instance(tmp_path, cluster, profiles) as instance:
        coordinator = instance.run_coordinator
        assert isinstance(coordinator, QueuedRunCoordinator)
        assert coordinator.get_run_queue_config().max_concurrent_runs == 10
        limits = coordinator.get_run_queue_config().tag_concurrency_limits
        assert {(x["key"], x["value"], x["limit"]) for x in limits} == {
            ("medallion/profile", "balanced", 6),
            ("medallion/profile", "focus", 10),
            ("medallion/held", "yes", 0),  # a run a focus run holds back never starts
        }

    # An edited profiles.yaml reaches the instance the project wrote, at the next run.
    calmer = profiles.model_copy(
        update={
            "profiles": {
                name: profile.model_copy(
                    update={
                        "settings": profile.settings.model_copy(update={"max_concurrent_runs": 2})
                    }
                )
                for name, profile in profiles.profiles.items()
            }
        }
    )
    with project_instance(tmp_path, cluster, calmer) as instance:
        assert instance.run_coordinator.get_run_queue_config().max_concurrent_runs == 2


def test_with_a_local_spark_the_instance_starts_no_more_runs_than_the_machine_holds(
    tmp_path: Path, demo_catalog
):
    """Each run of the queue starts its own local Spark driver on this machine: the queue's
    limit is the machine's room for runs, the profiles' limits below it unchanged."""
    env = {"MEDALLION_LOCAL_SPARK_RUNS": "1"}
    with project_instance(tmp_path, env, demo_catalog.profiles) as instance:
        queue = instance.run_coordinator.get_run_queue_config()
        assert queue.max_concurrent_runs == 1
        assert ("medallion/profile", "focus", 10) in {
            (x["key"], x["value"], x["limit"]) for x in queue.tag_concurrency_limits
        }
    with project_instance(tmp_path, {"MEDALLION_SPARK_REMOTE": "sc://127.0.0.1:15002"}) as inst:
        assert inst.run_coordinator.get_run_queue_config().max_concurrent_runs == 10  # Dagster's


@pytest.mark.slow
def test_runs_of_medallion_run_are_the_runs_dagster_dev_shows(tmp_path: Path, monkeypatch):
    root, _ = minimal_project(tmp_path, monkeypatch, {"order_id": 1, "amount": 5.0})
    (root / "metadata" / "profiles.yaml").write_text(PROFILES)  # balanced: high -> 2
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setenv("MEDALLION_LOCAL_SPARK_RUNS", "4")  # the profiles' limit, on any machine

    result = CliRunner().invoke(cli, ["run", "--project", str(root)])
    assert result.exit_code == 0, result.output
    home = root / ".medallion" / "dagster"
    # the UI command names the project (`medallion dev` opens the instance of the run)
    assert f"  medallion dev --project {root.resolve()}\n" in result.output
    # systems.yaml's max_concurrent_jobs became the instance's pool limits, with no hand-run
    # `dagster instance concurrency set`, and the run's steps ran under them.
    assert "pool limits from systems.yaml: s3_raw 2, warehouse 1" in result.output
    with project_instance(root, os.environ, load_catalog(root).profiles) as instance:
        # queued runs of dagster dev wait for the profiles' limits; this one ran in-process
        assert instance.run_coordinator.get_run_queue_config().max_concurrent_runs == 2
        limits = instance.event_log_storage.get_pool_limits()
        assert {p.name: p.limit for p in limits if not p.from_default} == {
            "s3_raw": 2,
            "warehouse": 1,
        }

    workspace = root / "workspace.yaml"
    workspace.write_text(
        "load_from:\n  - python_module:\n      module_name: medallion_assets.definitions\n"
    )
    env = {**server_env(root / ".medallion"), "MEDALLION_PROJECT": str(root)}
    with running_webserver(workspace, home, env) as server:
        runs = server.graphql(RUNS)["runsOrError"]["results"]

    assert runs and all(run["status"] == "SUCCESS" for run in runs)
    # the run's priority: balanced (active), its most critical table silver.orders_clean (high)
    for run in runs:
        tags = {t["key"]: t["value"] for t in run["tags"]}
        assert (tags["dagster/priority"], tags["medallion/profile"]) == ("2", "balanced")
    # the runs' event logs live in the project's instance, one per run
    assert {f"{run['runId']}.db" for run in runs} <= set(os.listdir(home / "history" / "runs"))
