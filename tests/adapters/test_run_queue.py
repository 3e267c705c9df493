"""Profiles at run time under a real ``dagster dev`` (webserver, daemon with the queued run
coordinator, code server, run workers on Spark), on the project instance's own dagster.yaml:

- switching a pipeline's profile through the control store changes the priority tags of the
  next schedule evaluation, with the same code server (no restart, no reload);
- a run launched without a priority (as from the UI) gets one from the instance as it queues;
- under focus, a critical pipeline's run queued behind low-priority runs starts before them,
  and the low-priority run holding the system it needs is pre-empted (audited) and its
  unfinished table re-queued through the relaunch path, to run after it;
- under balanced, runs launched together run at the same time, and no system ever has more of
  their steps running at once than its ``max_concurrent_jobs`` (read back from the event log).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner

from medallion_assets.adapters.instance import instance_settings
from medallion_assets.adapters.relaunch import ORIGIN_TAG, PREEMPTED_BY_TAG
from medallion_assets.adapters.translator import step_name, table_key
from medallion_assets.catalog import load_catalog
from medallion_assets.cli import cli
from medallion_assets.control_plane import ControlPlane
from medallion_assets.lake import Lake
from medallion_assets.profiles.priority import PRIORITY_TAG, PROFILE_TAG
from medallion_assets.simulate.scheduling import system_limits, traits_of
from tests.adapters.lineage_runs import lineage_runs
from tests.adapters.queue_project import (
    SPARK_LIMIT,
    WAVE_TABLES,
    WAVES,
    balanced_project,
    queue_project,
)
from tests.adapters.test_run_recovery import LOCATION, finished, step_started, wait_until
from tests.conftest import REPO
from tests.lineage_receiver import lineage_receiver
from tests.webserver import LAUNCH, DagsterWebserver, running_webserver, server_env

pytestmark = pytest.mark.slow

# About 15 s of Spark tasks (30 one-second tasks on 2 cores) before silver's rows come out, so
# the low run is still in silver when it is pre-empted: many short tasks, so a termination that
# cancels the running Spark job stops the step within a second or two; else the run stops at
# the boundary before its gold table.
SLOW_SILVER = (
    "SELECT order_id, amount, upper(country) AS country FROM bronze.orders WHERE amount >= 0 "
    "AND (SELECT count(*) FROM (SELECT /*+ REPARTITION(30) */ n FROM "
    "(SELECT explode(sequence(1, 30)) AS n) AS ns) AS parts WHERE "
    "coalesce(reflect('java.lang.Thread', 'sleep', CAST(1000 AS BIGINT)), '') <> 'never') > 0\n"
)

DRY_RUN = """
mutation Dry($selector: ScheduleSelector!, $at: Float) {
  scheduleDryRun(selectorData: $selector, timestamp: $at) { __typename
    ... on DryRunInstigationTick { evaluationResult {
        runRequests { tags { key value } } skipReason error { message } } }
    ... on PythonError { message } } }
"""


@pytest.fixture(scope="module")
def queue(tmp_path_factory):
    """The queue project served by ``dagster dev`` on an instance with the project's
    dagster.yaml (queued run coordinator, the profiles' limits)."""
    tmp = tmp_path_factory.mktemp("queue")
    with pytest.MonkeyPatch.context() as monkeypatch:
        root = queue_project(tmp, monkeypatch)
    (root / "sql" / "silver" / "orders_clean.sql").write_text(SLOW_SILVER)
    with (
        lineage_receiver() as receiver,  # the run workers' OpenLineage events
        serving(root, tmp / "dagster_home", receiver.url) as (server, instance),
    ):
        yield root, server, instance, receiver


@contextmanager
def serving(
    root: Path, home: Path, openlineage_url: str | None = None
) -> Iterator[tuple[DagsterWebserver, dg.DagsterInstance]]:
    """``dagster dev`` on ``root`` with a DAGSTER_HOME of the project's own dagster.yaml."""
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_settings(load_catalog(root).profiles, root))
    env = server_env(root / ".medallion") | {"MEDALLION_PROJECT": str(root)}
    if openlineage_url is not None:
        env["OPENLINEAGE_URL"] = openlineage_url
    with (
        running_webserver(REPO / "workspace.yaml", home, env, dev=True) as server,
        dg.DagsterInstance.from_config(str(home)) as instance,
    ):
        yield server, instance


def repository(server: DagsterWebserver) -> str:
    (found,) = server.graphql(
        "{ repositoriesOrError { ... on RepositoryConnection { nodes { name } } } }"
    )["repositoriesOrError"]["nodes"]
    return str(found["name"])


def scheduled_tags(server: DagsterWebserver, schedule: str) -> dict[str, str]:
    """The tags of the request the schedule makes when evaluated now, by the code server."""
    selector = {
        "repositoryLocationName": LOCATION,
        "repositoryName": repository(server),
        "scheduleName": schedule,
    }
    answer = server.graphql(DRY_RUN, {"selector": selector, "at": time.time()})["scheduleDryRun"]
    assert answer["__typename"] == "DryRunInstigationTick", answer
    (request,) = answer["evaluationResult"]["runRequests"]
    return {t["key"]: t["value"] for t in request["tags"]}


START_SENSOR = """
mutation($selector: SensorSelector!) {
  startSensor(sensorSelector: $selector) {
    __typename
    ... on Sensor { sensorState { status } }
    ... on PythonError { message }
  }
}
"""


def start_sensor(server: DagsterWebserver, sensor: str) -> None:
    """Start a sensor that waits stopped, as an operator does in the UI (Automation)."""
    selector = {
        "repositoryLocationName": LOCATION,
        "repositoryName": repository(server),
        "sensorName": sensor,
    }
    answer = server.graphql(START_SENSOR, {"selector": selector})["startSensor"]
    assert answer["__typename"] == "Sensor", answer
    assert answer["sensorState"]["status"] == "RUNNING", answer


def launch(
    server: DagsterWebserver, job: str, tags: dict[str, str], assets: list[str] | None = None
) -> str:
    """Launch ``job`` (only its ``assets``, e.g. ``bronze/orders``, when given)."""
    selector: dict[str, object] = {
        "repositoryLocationName": LOCATION,
        "repositoryName": repository(server),
        "jobName": job,
    }
    if assets is not None:
        selector["assetSelection"] = [{"path": a.split("/")} for a in assets]
    params = {
        "selector": selector,
        "runConfigData": {},
        "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
    }
    launched = server.graphql(LAUNCH, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return str(launched["run"]["runId"])


def priority(tags: dict[str, str]) -> tuple[str, str]:
    return tags[PRIORITY_TAG], tags[PROFILE_TAG]


def switch(root, pipeline: str, profile: str) -> None:
    env = {"MEDALLION_HOME": str(root / ".medallion")}
    args = ["control", "profile", pipeline, profile, "--reason", "test", "--project", str(root)]
    result = CliRunner().invoke(cli, args, env=env)
    assert result.exit_code == 0, result.output


def test_a_profile_switched_in_the_control_store_changes_the_next_requests(queue):
    root, server, _instance, _receiver = queue
    assert priority(scheduled_tags(server, "finance_schedule")) == ("3", "balanced")
    switch(root, "all", "focus")
    assert priority(scheduled_tags(server, "finance_schedule")) == ("10", "focus")
    assert priority(scheduled_tags(server, "reports_schedule")) == ("0", "focus")


def started_at(instance: dg.DagsterInstance, run_id: str) -> float | None:
    record = instance.get_run_record_by_id(run_id)
    return record.start_time if record is not None else None


def test_under_focus_a_critical_run_pre_empts_and_overtakes_low_priority_runs(queue):
    root, server, instance, receiver = queue
    switch(root, "all", "focus")  # one run at a time; low-priority runs may be pre-empted
    # silver's input first, so the low runs' silver steps build (and sleep) rather than wait
    lake = Lake.local(root / ".medallion" / "lake")
    if lake.current("bronze.orders") is None:
        launch(server, "reports", {}, assets=["bronze/orders"])
        wait_until(lambda: lake.current("bronze.orders"), "bronze.orders published")
    low_tags = scheduled_tags(server, "reports_schedule")
    first = launch(server, "reports", low_tags)
    wait_until(lambda: step_started(instance, first, "silver__orders_clean"), "the low run")
    second = launch(server, "reports", {})  # as from the UI: the instance tags it as it queues
    assert priority(dict(instance.get_run_by_id(second).tags)) == ("0", "focus")
    critical = launch(server, "finance", scheduled_tags(server, "finance_schedule"))

    # The critical run needs spark, which the first low run holds: it is pre-empted.
    stopped = wait_until(lambda: finished(instance, first), "the pre-empted run", timeout=90)
    assert stopped.status == dg.DagsterRunStatus.CANCELED
    store = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root).store()
    (entry,) = [e for e in store.audit(run_id=first) if e.kind == "preempt"]
    assert f"run {critical} (priority 10, profile focus) needs spark" in entry.message

    # The critical run starts first, though the second low run was queued before it.
    wait_until(lambda: started_at(instance, critical), "the critical run's start")
    done = wait_until(lambda: finished(instance, critical), "the critical run", timeout=240)
    assert done.status == dg.DagsterRunStatus.SUCCESS
    requeued = wait_until(
        lambda: instance.get_runs(dg.RunsFilter(tags={ORIGIN_TAG: first})), "the re-queued run"
    )[0]
    assert requeued.tags[PREEMPTED_BY_TAG] == critical
    assert priority(dict(requeued.tags)) == ("0", "focus")
    # what the pre-empted run had not finished: its gold table at least (silver too when the
    # termination stopped silver's Spark job rather than waiting for it)
    assert table_key("gold.order_count") in requeued.asset_selection
    assert requeued.asset_selection <= {
        table_key("silver.orders_clean"),
        table_key("gold.order_count"),
    }
    # Both low runs wait for it (the re-queued one is not waited for to the end: its path is
    # test_run_recovery's; the queue's order is what this test is about).
    for later in (second, requeued.run_id):
        start = started_at(instance, later)
        assert start is None or start > started_at(instance, critical)
    relaunched = [e.message for e in store.audit(run_id=first) if e.kind == "relaunch"]
    assert f"re-queued after pre-emption by run {critical}" in relaunched[0]

    # OpenLineage: each step the pre-empted run started ends ABORT when the pre-emption stopped
    # it (its table re-queued), COMPLETE when it let it finish; a table it never started sends
    # nothing under it.
    of_first = lineage_runs(
        [e for e in receiver.events if e["run"]["facets"]["parent"]["run"]["runId"] == first]
    )
    ended = {
        events[0]["job"]["name"]: [e["eventType"] for e in events] for events in of_first.values()
    }
    assert "silver.orders_clean" in ended, ended
    for table, types in ended.items():
        expected = "ABORT" if table_key(table) in requeued.asset_selection else "COMPLETE"
        assert types == ["START", expected], (table, types)


@pytest.fixture
def balanced(tmp_path, monkeypatch):
    """The balanced variant (``queue_project.balanced_project``) under ``dagster dev`` on the
    project's instance settings; its own fixture, stopped when the test ends, so two servers
    never run at once."""
    root = balanced_project(tmp_path, monkeypatch)
    with serving(root, tmp_path / "dagster_home") as (server, instance):
        yield root, server, instance


STEP_ENDS = (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE)


def step_intervals(instance: dg.DagsterInstance, run_id: str) -> dict[str, tuple[float, float]]:
    """Step key -> (its STEP_START, its STEP_SUCCESS or STEP_FAILURE) in ``run_id``'s event
    log, in seconds since the epoch."""
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    types = {dg.DagsterEventType.STEP_START, *STEP_ENDS}
    for entry in instance.all_logs(run_id, of_type=types):
        assert entry.step_key is not None and entry.dagster_event is not None
        side = starts if entry.dagster_event.event_type == dg.DagsterEventType.STEP_START else ends
        side[entry.step_key] = entry.timestamp
    assert set(starts) == set(ends), f"run {run_id}: steps started but never ended"
    return {key: (starts[key], ends[key]) for key in starts}


def peak(intervals: list[tuple[str, float, float]]) -> tuple[int, int]:
    """(the most intervals open at one moment, the most distinct runs among the open ones at
    one moment) of (run id, start, end) intervals; one that ends as another starts has ended."""
    edges = sorted(
        [(start, 1, run) for run, start, _ in intervals]
        + [(end, -1, run) for run, _, end in intervals]
    )
    open_by_run: dict[str, int] = {}
    highest = runs = 0
    for _, change, run in edges:
        open_by_run[run] = open_by_run.get(run, 0) + change
        highest = max(highest, sum(open_by_run.values()))
        runs = max(runs, sum(1 for n in open_by_run.values() if n))
    return highest, runs


def pool_limit(instance: dg.DagsterInstance, pool: str) -> int | None:
    limits = instance.event_log_storage.get_pool_limits()
    return next((p.limit for p in limits if p.name == pool and not p.from_default), None)


def test_under_balanced_no_system_runs_more_steps_at_once_than_its_limit(balanced):
    root, server, instance = balanced
    lake = Lake.local(root / ".medallion" / "lake")
    # the waves' input: the new_objects sensor (stopped until started, as in the UI) builds it
    # from the raw order on its first tick
    start_sensor(server, "new_objects__orders")
    wait_until(lambda: lake.current("bronze.orders"), "bronze.orders published")
    # systems.yaml's limit reaches the instance through the system_pools sensor's first tick
    wait_until(lambda: pool_limit(instance, "spark") == SPARK_LIMIT, "spark's pool limit")

    runs = [launch(server, wave, {}) for wave in WAVES]  # as from the UI, all at once
    done = [wait_until(lambda r=r: finished(instance, r), f"run {r}", timeout=180) for r in runs]
    assert [run.status for run in done] == [dg.DagsterRunStatus.SUCCESS] * len(WAVES)
    assert {run.tags[PROFILE_TAG] for run in done} == {"balanced"}

    catalog = load_catalog(root)
    traits = traits_of(catalog)
    table_of = {step_name(name): name for name in catalog.datasets}
    on_system: dict[str, list[tuple[str, float, float]]] = {}
    built = set()
    for run_id in runs:
        for key, (start, end) in step_intervals(instance, run_id).items():
            built.add(table_of[key])
            for system in traits[table_of[key]].systems:
                on_system.setdefault(system, []).append((run_id, start, end))
    assert built == {t for tables in WAVE_TABLES.values() for t in tables}
    limits = system_limits(catalog)
    assert limits["spark"] == SPARK_LIMIT and len(on_system["spark"]) == 2 * len(WAVES)
    for system, intervals in on_system.items():
        assert peak(intervals)[0] <= limits.get(system, len(intervals)), system
    # The limit held while steps of different runs ran at once (a limit kept because nothing
    # overlapped proves nothing), and every slot was used.
    records = [instance.get_run_record_by_id(r) for r in runs]
    spans = [(r.start_time, r.end_time) for r in records if r and r.start_time and r.end_time]
    assert len(spans) == len(runs) and max(s for s, _ in spans) < min(e for _, e in spans)
    assert peak(on_system["spark"]) == (SPARK_LIMIT, len(runs))
