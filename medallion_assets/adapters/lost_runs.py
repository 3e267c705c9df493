"""Runs whose process was killed are marked failed, not left STARTED forever.

Under ``dagster dev`` (or any deployment with the daemon) Dagster's run monitoring does this
(``run_monitoring`` in the instance settings ``project_instance`` writes). ``medallion run``
executes in its own process with no daemon watching it, so it tags each run with its process
(pid, the process's start time, host) and, at the start of the next ``medallion run``, marks
failed every run of this host left STARTING/STARTED whose process is gone. The process's start
time guards against a recycled pid: a live process with the same pid but another start time is
not the run's.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import dagster as dg

PID_TAG = "medallion/pid"
HOST_TAG = "medallion/host"
PROCESS_START_TAG = "medallion/process_start"  # clock ticks after boot, from /proc/<pid>/stat
_UNFINISHED = [
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]


def process_tags() -> dict[str, str]:
    """Tags naming this process, for a run it executes in process."""
    tags = {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}
    start = process_start(os.getpid())
    if start is not None:
        tags[PROCESS_START_TAG] = start
    return tags


def process_start(pid: int) -> str | None:
    """The process's start time (Linux ``/proc``), or None where there is no ``/proc``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.rsplit(")", 1)[1].split()[19]


def process_alive(pid: int, start: str | None) -> bool:
    """The process ``pid`` still runs and is the one that started the run."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it exists
    if start is None:
        return True
    now = process_start(pid)
    return now is None or now == start


def mark_lost_runs_failed(
    instance: dg.DagsterInstance, log: Callable[[str], None] = print
) -> list[str]:
    """Mark failed each unfinished run this host executed in a process that is gone; returns
    their run ids."""
    runs = instance.get_runs(
        dg.RunsFilter(statuses=_UNFINISHED, tags={HOST_TAG: socket.gethostname()})
    )
    lost = []
    for run in runs:
        pid = run.tags.get(PID_TAG, "")
        if not pid.isdigit() or process_alive(int(pid), run.tags.get(PROCESS_START_TAG)):
            continue
        message = (
            f"run process {pid} is gone (killed); marked failed by the next medallion run "
            f"(pid {os.getpid()}), which redoes what it did not finish"
        )
        instance.report_engine_event(message, run)
        instance.report_run_failed(run, message)
        # Its steps' pool slots die with it: without the daemon (which frees the slots of
        # ended runs under dagster dev) they would stay claimed and block every later run.
        if instance.event_log_storage.supports_global_concurrency_limits:
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        partition = run.tags.get("dagster/partition")
        label = f"{run.job_name}" + (f" [{partition}]" if partition else "")
        log(f"run {run.run_id} of {label} was left {run.status.value}: {message}")
        lost.append(run.run_id)
    return lost
