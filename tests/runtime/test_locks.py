"""Build locks: one holder at a time, waiters hear who holds it, and a holder killed with
SIGKILL leaves no stale lock (flock files, and PostgreSQL advisory locks on a real server)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from medallion_assets.runtime.locks import AdvisoryLocks, FileLocks, Holder, build_locks
from tests.lock_holder import hold_lock_in_child


def assert_exclusive_and_freed_by_sigkill(control_url: str, lake: Path) -> None:
    child = hold_lock_in_child(control_url, lake, "table:gold.revenue[2026-01-01]")
    locks = build_locks(control_url, lake)
    heard: list[Holder | None] = []
    try:
        started = time.monotonic()
        with locks.hold(
            "table:gold.revenue[2026-01-01]", Holder.now("me"), 1.0, heard.append
        ) as held:
            assert not held
        assert 1.0 <= time.monotonic() - started < 5
        (other,) = heard
        assert other is not None and other.pid == child.pid and other.run_id.startswith("child")
        # Another partition of the same table is another lock: not held by the child.
        with locks.hold("table:gold.revenue[2026-01-02]", Holder.now("me"), 0) as held:
            assert held
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    started = time.monotonic()
    with locks.hold("table:gold.revenue[2026-01-01]", Holder.now("me"), 10.0) as held:
        assert held
    assert time.monotonic() - started < 2  # freed with the killed process, no lease to expire


def test_a_file_lock_is_exclusive_and_dies_with_a_killed_holder(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'control.db'}"
    assert isinstance(build_locks(url, tmp_path / "lake"), FileLocks)
    assert_exclusive_and_freed_by_sigkill(url, tmp_path / "lake")


def test_a_released_lock_is_taken_by_the_waiter(tmp_path: Path):
    locks = FileLocks(tmp_path / "_locks")
    first = locks.hold("run:minimal", Holder.now(""), 0)
    assert first.__enter__()
    heard: list[Holder | None] = []
    second = locks.hold("run:minimal", Holder.now(""), 30, heard.append)
    first.__exit__(None, None, None)
    assert second.__enter__() and heard == []  # free again: taken at once, nobody heard of
    second.__exit__(None, None, None)


def test_a_waiter_names_the_new_holder_not_a_killed_ones_leftover(tmp_path: Path):
    # A holder takes the flock an instant before it writes who it is; the file may still hold
    # a SIGKILLed holder's identity then. The waiter asks again until the live holder shows.
    locks = FileLocks(tmp_path / "_locks")
    path = locks.path("run:minimal")
    path.parent.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    path.write_text(
        json.dumps(asdict(Holder(run_id="", pid=dead.pid, host=socket.gethostname(), since=0.0)))
    )
    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    alive = Holder.now("the-new-one")
    writer = threading.Timer(0.3, lambda: os.pwrite(fd, json.dumps(asdict(alive)).encode(), 0))
    writer.start()
    heard: list[Holder | None] = []
    try:
        with locks.hold("run:minimal", Holder.now("me"), 0.5, heard.append) as held:
            assert not held
    finally:
        writer.join()
        os.close(fd)
    assert heard == [alive]


@pytest.mark.slow
def test_an_advisory_lock_is_exclusive_and_dies_with_a_killed_holder(
    tmp_path: Path, postgres_server
):
    assert isinstance(build_locks(postgres_server.dsn, tmp_path / "lake"), AdvisoryLocks)
    assert_exclusive_and_freed_by_sigkill(postgres_server.dsn, tmp_path / "lake")
