"""Benchmark G's second clock: each side's time from its first table's work to its last
table's end, start-up left out (Python and Spark starting, definitions and graph loading, run
creation), as issue 45 asks ("what a step costs beyond its Spark jobs").

- ``script``: the process writes ``span.json`` (wall seconds from just before its first build
  to just after its last, ``bench.silver_gold script``);
- ``medallion``: from the first step's ``STEP_START``, or the moment the run says its Spark
  driver started (``Spark started in ...``) when that is later, to the last step's end over
  every run of the process, as the rep's own Dagster instance recorded them (its SQLite files,
  read directly); the bronze steps that find nothing new are in it (they are per-table cost).
  ``medallion run`` starts its driver in the background while Dagster loads, so its first
  steps can begin before the driver is up and wait for it inside the step: that wait is the
  driver's start-up, which the other two sides' clocks leave out too (theirs start once their
  Spark is up). Until 2026-12-05 the clock started at the first ``STEP_START`` (with the wait);
  ``medallion_span(..., ready_at=None)`` still measures that;
- ``sdp``: from the first line of ``spark-pipelines``' output that reports a flow's state to
  the line saying the run completed, each timed as it arrives (its own timestamps are whole
  seconds).

None when a side's record is missing; the side's whole-process time still counts.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

STEP_ENDS = ("STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED")
SDP_FLOW = re.compile(r"\bFlow\b.*\bis\b")
SDP_DONE = re.compile(r"\bRun\b.*\bCOMPLETED\b", re.IGNORECASE)


def timed_run(
    command: Sequence[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[int, float, list[tuple[float, str]]]:
    """Run ``command``; (exit code, wall seconds, each output line with its arrival second)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append((time.perf_counter() - started, line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    seconds = time.perf_counter() - started
    reader.join(timeout=10)
    return code, seconds, lines


def sdp_span(lines: list[tuple[float, str]]) -> float | None:
    first = next((t for t, line in lines if SDP_FLOW.search(line)), None)
    done = [t for t, line in lines if SDP_DONE.search(line)]
    if first is None or not done:
        return None
    return done[-1] - first


def script_span(work: Path) -> float | None:
    path = work / "span.json"
    if not path.exists():
        return None
    return float(json.loads(path.read_text())["work_s"])


SPARK_READY = re.compile(r"^\s*Spark started in ")


def spark_ready(lines: list[tuple[float, str]]) -> float | None:
    """When (seconds from the process's start) ``medallion run`` said its driver started."""
    return next((t for t, line in lines if SPARK_READY.search(line)), None)


def medallion_span(dagster_home: Path, ready_at: float | None = None) -> float | None:
    """First step start (or ``ready_at``, an epoch second, when later) to last step end over
    every run in the instance's SQLite files."""
    shards = [p for p in (dagster_home / "history" / "runs").glob("*.db") if p.stem != "index"]
    starts: list[float] = []
    ends: list[float] = []
    for shard in shards:
        with sqlite3.connect(shard) as db:
            rows = db.execute(
                "SELECT dagster_event_type, timestamp FROM event_logs "
                "WHERE dagster_event_type IN (?, ?, ?, ?)",
                ("STEP_START", *STEP_ENDS),
            ).fetchall()
        for kind, stamp in rows:
            at = datetime.fromisoformat(str(stamp)).replace(tzinfo=UTC).timestamp()
            (starts if kind == "STEP_START" else ends).append(at)
    if not starts or not ends:
        return None
    return max(ends) - max(min(starts), ready_at or 0.0)
