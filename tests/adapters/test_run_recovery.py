"""Runs in real Dagster processes (webserver, daemon, code servers, run workers on Spark) on the
minimal project, whose silver step is slowed down so a test can act while it executes:

- a run whose process is killed (SIGKILL, as the OOM killer does) is marked failed by Dagster,
  and the ``relaunch_failed_runs`` sensor heals it and re-launches only its unfinished tables;
- a table disabled while its step executes gets its run terminated by the ``kill_switch``
  sensor within one tick, and its previous version stays current.
"""

from __future__ import annotations

import os
import signal
import time

import dagster as dg
import pytest

from medallion_assets.adapters.relaunch import ATTEMPT_TAG, ORIGIN_TAG
from medallion_assets.adapters.translator import table_key
from medallion_assets.control_plane import ControlPlane
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.lake import Lake
from tests.adapters.minimal import minimal_project, orders
from tests.conftest import REPO
from tests.lake_helpers import publish_frame
from tests.lineage_receiver import lineage_receiver
from tests.webserver import (
    LAUNCH,
    DagsterWebserver,
    running_webserver,
    server_env,
    write_instance,
)

pytestmark = pytest.mark.slow

LOCATION = "medallion_assets.definitions"
SLOW_SILVER = (
    "SELECT order_id, amount, upper(country) AS country FROM bronze.orders WHERE amount >= 0 "
    # Sleeps 20 s per row, in the executor: the step is busy long enough to be acted upon.
    "AND coalesce(reflect('java.lang.Thread', 'sleep', CAST(20000 AS BIGINT)), '') <> 'never'\n"
)
POLICIES = """
retry_policies:
  standard: {max_retries: 2, delay_seconds: 1, backoff: fixed}
default_retry_policy: standard
healing_rules:
  - name: run_process_lost
    match: {exception: RunProcessLost, message: "terminated by signal|unexpectedly exited"}
    error_code: RUN_PROCESS_LOST
    actions: [clear_staging]
    then: retry
"""
WAIT = 240.0


@pytest.fixture(scope="module")
def dagster_processes(tmp_path_factory):
    """The minimal project served by ``dagster dev``: webserver, daemon, one code server."""
    tmp = tmp_path_factory.mktemp("recovery")
    with pytest.MonkeyPatch.context() as monkeypatch:
        root, _store = minimal_project(
            tmp, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
        )
    (root / "sql" / "silver" / "orders_clean.sql").write_text(SLOW_SILVER)
    (root / "metadata" / "policies.yaml").write_text(POLICIES)
    home = write_instance(tmp / "dagster_home")
    env = server_env(root / ".medallion") | {"MEDALLION_PROJECT": str(root)}
    with lineage_receiver() as receiver:  # the run workers' OpenLineage events
        env["OPENLINEAGE_URL"] = receiver.url
        with (
            running_webserver(REPO / "workspace.yaml", home, env, dev=True) as server,
            dg.DagsterInstance.from_config(str(home)) as instance,
        ):
            yield root, server, instance, receiver


def launch(server: DagsterWebserver, job: str) -> str:
    (repository,) = server.graphql(
        "{ repositoriesOrError { ... on RepositoryConnection { nodes { name } } } }"
    )["repositoriesOrError"]["nodes"]
    params = {
        "selector": {
            "repositoryLocationName": LOCATION,
            "repositoryName": repository["name"],
            "jobName": job,
        },
        "mode": "default",
        "runConfigData": {},
    }
    launched = server.graphql(LAUNCH, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return str(launched["run"]["runId"])


def wait_until(condition, what: str, timeout: float = WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"{what} not seen after {timeout:.0f} s")


def step_started(instance, run_id: str, step: str) -> bool:
    events = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)
    return any(e.dagster_event.step_key == step for e in events)


def worker_pid(instance, run_id: str) -> int:
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        if entry.message.startswith("Started process for run (pid: "):
            return int(entry.message.split("pid: ")[1].split(")")[0])
    raise AssertionError(f"run {run_id} has no 'Started process' event")


def finished(instance, run_id: str):
    run = instance.get_run_by_id(run_id)
    return run if run is not None and run.is_finished else None


def test_run_monitoring_runs_in_the_daemon(dagster_processes):
    _root, server, instance, _receiver = dagster_processes
    assert instance.run_monitoring_enabled and instance.run_monitoring_max_resume_run_attempts == 0

    def monitoring() -> dict | None:
        statuses = server.graphql(
            "{ instance { daemonHealth { allDaemonStatuses { daemonType required healthy } } } }"
        )["instance"]["daemonHealth"]["allDaemonStatuses"]
        found = next(s for s in statuses if s["daemonType"] == "MONITORING")
        return found if found["healthy"] else None

    assert wait_until(monitoring, "a healthy run-monitoring daemon", timeout=120)["required"]


def test_a_killed_run_process_is_healed_and_only_its_unfinished_tables_relaunched(
    dagster_processes,
):
    root, server, instance, _receiver = dagster_processes
    lake = Lake.local(root / ".medallion" / "lake")
    run_id = launch(server, "daily")
    wait_until(lambda: step_started(instance, run_id, "silver__orders_clean"), "silver's start")
    pid = worker_pid(instance, run_id)
    time.sleep(1.0)  # silver is in its Spark job, sleeping: it has staged nothing yet
    os.kill(pid, signal.SIGKILL)

    failed = wait_until(lambda: finished(instance, run_id), "the killed run marked finished")
    assert failed.status == dg.DagsterRunStatus.FAILURE
    assert lake.current("bronze.orders") is not None and lake.current("silver.orders_clean") is None

    relaunch = wait_until(
        lambda: instance.get_runs(dg.RunsFilter(tags={ORIGIN_TAG: run_id})), "the relaunch"
    )[0]
    assert relaunch.tags[ATTEMPT_TAG] == "1" and relaunch.tags["pipeline"] == "daily"
    assert relaunch.job_name == "daily"
    assert relaunch.asset_selection == {
        table_key("silver.orders_clean"),
        table_key("gold.revenue"),
    }  # bronze finished in the killed run: not run again
    done = wait_until(lambda: finished(instance, relaunch.run_id), "the relaunch to finish")
    assert done.status == dg.DagsterRunStatus.SUCCESS
    assert lake.current("silver.orders_clean").run_id == relaunch.run_id
    assert lake.current("gold.revenue").rows == 1
    assert lake.current("bronze.orders").run_id != relaunch.run_id

    store = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root).store()
    log = [(e.kind, e.entity, e.message) for e in store.audit(run_id=run_id)]
    kinds = [(k, entity) for k, entity, _ in log]
    assert ("error", "run") in kinds and ("relaunch", "run") in kinds
    error = next(m for k, e, m in log if (k, e) == ("error", "run"))
    assert "RUN_PROCESS_LOST" in error and "SIGKILL" in error
    healed = {e for k, e, _ in log if k == "healing"}
    assert healed == {"dataset:silver.orders_clean", "dataset:gold.revenue"}
    relaunched = next(m for k, e, m in log if k == "relaunch")
    assert f"as daily (relaunch 1 of the chain from {run_id})" in relaunched


def test_the_kill_switch_sensor_terminates_a_run_whose_executing_table_is_disabled(
    dagster_processes, spark
):
    root, server, instance, receiver = dagster_processes
    lake = Lake.local(root / ".medallion" / "lake")
    before = lake.current("silver.orders_clean")
    if before is None:  # run alone: give silver a previous version to keep
        bronze = spark.createDataFrame(
            [(7, 1.0, "FR")], "order_id bigint, amount double, country string"
        )
        before = publish_frame(lake, spark, bronze, "silver.orders_clean", "previous", {})
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    # A new raw object: bronze changes, so silver rebuilds (and sleeps) instead of reusing.
    store = LocalFolderObjectStore(root / ".medallion" / "s3")
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "fr"})
    )
    run_id = launch(server, "daily")
    try:
        # The step has passed its own flag check (the boundary) once it audits its attempt:
        # from then on only the sensor can stop it.
        wait_until(
            lambda: [
                e
                for e in plane.store().audit(run_id=run_id)
                if e.kind == "attempt" and e.entity == "dataset:silver.orders_clean"
            ],
            "silver's attempt",
        )
        plane.store().set_flag("dataset", "silver.orders_clean", False, "bad upstream", "test")
        flipped = time.monotonic()
        run = wait_until(lambda: finished(instance, run_id), "the run terminated", timeout=60)
        took = time.monotonic() - flipped
    finally:
        plane.store().set_flag("dataset", "silver.orders_clean", True, "test over", "test")
    assert run.status == dg.DagsterRunStatus.CANCELED
    assert took < 20  # before the 20 s step could finish: within a tick (5 s) or so
    assert lake.current("silver.orders_clean") == before
    assert lake.current("gold.revenue") is None or lake.current("gold.revenue").run_id != run_id
    terminate = [e for e in plane.store().audit(run_id=run_id) if e.kind == "terminate"]
    assert len(terminate) == 1 and "silver.orders_clean" in terminate[0].message
    # the terminated step's OpenLineage run ends ABORT, under the Dagster run
    silver = [
        e
        for e in receiver.events
        if e["job"]["name"] == "silver.orders_clean"
        and e["run"]["facets"]["parent"]["run"]["runId"] == run_id
    ]
    assert [e["eventType"] for e in silver] == ["START", "ABORT"], silver
    assert "being terminated" in silver[-1]["run"]["facets"]["medallion"]["message"]
