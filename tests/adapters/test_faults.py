"""Faults leave nothing half-done, on real `medallion run` processes (Spark, the lake, a DuckDB
warehouse, a persistent Dagster instance):

- a run killed with SIGKILL at each crash point in turn, then run to completion, leaves the lake
  and the warehouse equal to a clean run's on the same data, and every killed run FAILED;
- two runs started together: one waits for the other, says so, and nothing is built twice;
- a step waits for another run building its table, then reuses that build, or skips the table
  when the wait runs out.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.headless import run_project
from medallion_assets.adapters.instance import INSTANCE_SETTINGS
from medallion_assets.adapters.lost_runs import PID_TAG
from medallion_assets.control_plane import ControlPlane
from medallion_assets.lake import Lake
from tests.adapters.faults.project import faults_project, run_env, snapshot, start_run
from tests.lock_holder import hold_lock_in_child

pytestmark = pytest.mark.slow

RUN_TIMEOUT = 600
# In run order, all on the first day so each killed run is short: each run's successor gets
# past the previous point (rebuilding or reusing what it left) and dies at the next.
CRASH_POINTS = (
    "ingest.inspected@bronze.events[2026-01-01]",  # raw objects checked, nothing published
    "lake.staged@bronze.events[2026-01-01]",  # quarantine published, the table's version
    # in place but CURRENT not moved, the manifest not written
    "lake.published@gold.daily_events[2026-01-01]",  # published, warehouse not loaded
    "warehouse.loaded@gold.daily_events[2026-01-01]",  # appended, the load not recorded
)
LOST = "is gone (killed); marked failed by the next medallion run"


def instance_home(where: Path) -> Path:
    """A persistent instance with the project's settings, as `medallion run` creates."""
    home = where / "dagster_home"
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(INSTANCE_SETTINGS)
    return home


def in_process(root: Path, monkeypatch, **env: str):
    """Run the project in this process (on the tests' Spark session), with its own state."""
    monkeypatch.setenv("MEDALLION_HOME", str(root / ".medallion"))
    for name in ("MEDALLION_LAKE", "MEDALLION_WAREHOUSE_URL", "MEDALLION_CONTROL_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    said: list[str] = []
    summary = run_project(root, log=said.append, instance=dg.DagsterInstance.ephemeral())
    return summary, said


@pytest.fixture(scope="module")
def clean(tmp_path_factory, spark):
    """What one clean run of the faults project leaves."""
    root = faults_project(tmp_path_factory.mktemp("clean"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        summary, _ = in_process(root, monkeypatch, MEDALLION_MAX_WORKERS="2")
    assert summary.success, summary.failed_steps
    found = snapshot(root)
    assert all(rows for where, rows in found.items() if "__quarantine" not in where), found
    return found


def test_one_step_at_a_time_builds_what_two_at_a_time_build(clean, tmp_path, monkeypatch):
    root = faults_project(tmp_path)
    summary, said = in_process(root, monkeypatch, MEDALLION_MAX_WORKERS="1")
    assert summary.success, summary.failed_steps
    assert "steps run 1 at a time" in "\n".join(said)
    assert snapshot(root) == clean


FOCUS = """\
active: focus
profiles:
  focus:
    settings:
      max_concurrent_runs: 2
      criticality_priority: {critical: 10, high: 5, normal: 1, low: 0}
      skip_below: normal
      include_upstream_of_critical: true
      spread_over_systems: false
"""


def test_a_profile_leaves_tables_below_its_skip_below_out_of_the_run(tmp_path, monkeypatch):
    root = faults_project(tmp_path)
    meta = root / "metadata"
    (meta / "profiles.yaml").write_text(FOCUS)
    datasets = (meta / "datasets.yaml").read_text()
    low = "  gold.daily_events:\n    criticality: low\n"
    (meta / "datasets.yaml").write_text(datasets.replace("  gold.daily_events:\n", low))
    summary, said = in_process(root, monkeypatch, MEDALLION_MAX_WORKERS="2")
    assert "profile focus (profiles.yaml: active); steps run 2 at a time" in "\n".join(said)
    assert summary.success, summary.failed_steps
    (left_out,) = {r.table for r in summary.having("disabled")}
    assert left_out == "gold.daily_events"
    assert all(
        "low is below the profile's skip_below (normal)" in m for m in summary.disabled.values()
    )
    assert summary.having("built")  # the rest was built
    assert Lake.local(root / ".medallion" / "lake").partitions("gold.daily_events") == []


def test_a_run_killed_at_any_point_is_finished_by_the_next_as_a_clean_run(clean, tmp_path):
    root = faults_project(tmp_path)
    home = instance_home(tmp_path)
    log = tmp_path / "runs.log"
    for point in CRASH_POINTS:
        run = start_run(root, run_env(root, home, MEDALLION_CRASH_AT=point), log)
        assert run.wait(RUN_TIMEOUT) == -signal.SIGKILL, (
            f"{point} never reached:\n{log.read_text()}"
        )
    final = start_run(root, run_env(root, home), log)
    assert final.wait(RUN_TIMEOUT) == 0, log.read_text()[-5000:]

    assert snapshot(root) == clean
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
        assert [r.run_id for r in runs if not r.is_finished] == []
        failed = [r for r in runs if r.status == dg.DagsterRunStatus.FAILURE]
        # each killed process's unfinished runs (the day it was in, and the run beside the
        # days when it was still going), marked by its successor; nothing else failed
        assert len({r.tags[PID_TAG] for r in failed}) == len(CRASH_POINTS)
        for run in failed:
            assert any(LOST in e.message for e in instance.all_logs(run.run_id))
    assert log.read_text().count(LOST) == len(failed)


def test_two_runs_started_together_build_each_table_once(clean, tmp_path):
    root = faults_project(tmp_path)
    home = instance_home(tmp_path)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    runs = [start_run(root, run_env(root, home), log) for log in logs]
    for run, log in zip(runs, logs, strict=True):
        assert run.wait(RUN_TIMEOUT) == 0, log.read_text()[-5000:]

    # Whichever took the project's run lock first ran; the other waited for it, and said so.
    said = [log.read_text() for log in logs]
    waited = [i for i in (0, 1) if f"another medallion run (pid {runs[1 - i].pid} on " in said[i]]
    assert len(waited) == 1, said
    assert "is running on this project; waiting up to 3600 s" in said[waited[0]]
    assert snapshot(root) == clean
    lake = Lake.local(root / ".medallion" / "lake")
    built = {
        (table, partition): len(
            [h for h in lake.history(table) if h.code_version and h.partition == partition]
        )
        for table in ("bronze.events", "gold.daily_events", "gold.revenue")
        for partition in lake.partitions(table) or [None]
    }
    assert set(built.values()) == {1}, built  # the second run reused every table


def test_a_step_waits_for_another_builder_of_its_table_then_reuses_or_skips(
    tmp_path, monkeypatch, spark
):
    root = faults_project(tmp_path)
    lake_root = root / ".medallion" / "lake"
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    other = hold_lock_in_child(plane.url, root / ".medallion", "table:gold.revenue")
    try:
        summary, _ = in_process(root, monkeypatch, MEDALLION_LOCK_WAIT_SECONDS="1")
    finally:
        os.kill(other.pid, signal.SIGKILL)
        other.wait()
    (busy,) = summary.having("busy")
    assert busy.table == "gold.revenue"
    assert "still being built by another run after 1 s" in busy.message
    assert summary.success and summary.having("built")  # the rest was built
    assert Lake.local(lake_root).current("gold.revenue") is None  # skipped, nothing half-built
    busy = [e for e in plane.store().audit() if e.kind == "busy"]
    assert [e.entity for e in busy] == ["dataset:gold.revenue"]

    # Now the other builder finishes (is killed) while the step waits: the step goes on.
    other = hold_lock_in_child(plane.url, root / ".medallion", "table:gold.revenue")
    waits = len(waits_for_revenue(plane))
    waiting = threading.Thread(target=kill_when_waited_for, args=(plane, other.pid, waits))
    waiting.start()
    try:
        summary, _ = in_process(root, monkeypatch, MEDALLION_LOCK_WAIT_SECONDS="120")
    finally:
        waiting.join(RUN_TIMEOUT)
        other.wait()
    assert summary.success
    (waited,) = summary.waited
    assert f"table:gold.revenue: run child-run, pid {other.pid} on " in waited
    assert "waiting up to 120 s" in waited
    assert {r.table: r.status for r in summary.results}["gold.revenue"] == "built"
    assert Lake.local(lake_root).current("gold.revenue").rows == 3


def waits_for_revenue(plane: ControlPlane) -> list:
    return [e for e in plane.store().audit(["dataset:gold.revenue"]) if e.kind == "wait"]


def kill_when_waited_for(plane: ControlPlane, pid: int, waits_before: int) -> None:
    """SIGKILL the lock's holder once a new step has started waiting for it."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        if len(waits_for_revenue(plane)) > waits_before:
            break
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
