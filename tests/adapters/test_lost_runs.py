"""Runs whose process was killed are marked failed by the next ``medallion run`` (there is no
daemon to do it), on a real Dagster instance; live runs and other hosts' runs are left alone."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import dagster as dg
import pytest

from medallion_assets.adapters.instance import instance_settings, project_instance
from medallion_assets.adapters.lost_runs import (
    HOST_TAG,
    PID_TAG,
    PROCESS_START_TAG,
    mark_lost_runs_failed,
    process_start,
    process_tags,
)
from medallion_assets.settings import MedallionSettings


@dg.op
def noop() -> None:
    pass


@dg.job
def headless_job() -> None:
    noop()


@pytest.fixture(scope="module")
def instance(tmp_path_factory):
    # One instance for the module (each takes seconds to create): every test's runs are its own.
    with dg.DagsterInstance.from_config(str(tmp_path_factory.mktemp("instance"))) as instance:
        yield instance


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def started(instance, tags: dict[str, str]) -> dg.DagsterRun:
    return instance.create_run_for_job(headless_job, status=dg.DagsterRunStatus.STARTED, tags=tags)


def status(instance, run: dg.DagsterRun) -> dg.DagsterRunStatus:
    return instance.get_run_by_id(run.run_id).status


def test_a_run_whose_process_is_gone_is_marked_failed_and_says_why(instance):
    pid = dead_pid()
    lost = started(instance, {PID_TAG: str(pid), HOST_TAG: socket.gethostname()})
    said: list[str] = []
    assert mark_lost_runs_failed(instance, said.append) == [lost.run_id]
    assert status(instance, lost) == dg.DagsterRunStatus.FAILURE
    events = [e.message for e in instance.all_logs(lost.run_id)]
    expected = f"run process {pid} is gone (killed); marked failed by the next medallion run"
    assert any(expected in m for m in events)
    assert said and expected in said[0] and lost.run_id in said[0]


def test_live_runs_and_other_hosts_runs_are_left_alone(instance):
    mine = started(instance, process_tags())  # this very process: alive
    elsewhere = started(instance, {PID_TAG: str(dead_pid()), HOST_TAG: "another-host"})
    untagged = started(instance, {})  # launched by dagster dev: its daemon watches it
    assert mark_lost_runs_failed(instance, lambda _m: None) == []
    for run in (mine, elsewhere, untagged):
        assert status(instance, run) == dg.DagsterRunStatus.STARTED


@pytest.mark.skipif(process_start(os.getpid()) is None, reason="needs /proc")
def test_a_recycled_pid_does_not_keep_a_lost_run_alive(instance):
    # The pid is alive (it is ours) but started at another time: not the run's process.
    tags = {**process_tags(), PROCESS_START_TAG: "1"}
    recycled = started(instance, tags)
    assert mark_lost_runs_failed(instance, lambda _m: None) == [recycled.run_id]
    assert status(instance, recycled) == dg.DagsterRunStatus.FAILURE


def test_the_project_instance_enables_run_monitoring(tmp_path):
    with project_instance(tmp_path, env={}) as instance:
        assert instance.run_monitoring_enabled
        assert instance.run_monitoring_max_resume_run_attempts == 0
        assert instance.run_monitoring_start_timeout_seconds == 180
    written = (tmp_path / ".medallion" / "dagster" / "dagster.yaml").read_text()
    slots = MedallionSettings.from_env({}, tmp_path).run_slots()
    assert written == instance_settings(None, tmp_path, slots, tmp_path / ".medallion" / "dagster")
