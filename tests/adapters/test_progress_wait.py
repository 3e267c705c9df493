"""A run waiting on another run's tables (``ProgressHandler.wait_for``): it wakes when each
has ended, whatever the outcome, or when the other run is over, a table it never reported
being "not run"."""

from __future__ import annotations

import threading
import time

from medallion_assets.adapters.progress import ProgressHandler


def test_it_waits_until_each_table_has_ended_and_says_how():
    handler = ProgressHandler(3, None)
    over = threading.Event()
    got: dict[str, str] = {}
    waiter = threading.Thread(target=lambda: got.update(handler.wait_for(["a", "b"], over)))
    waiter.start()
    handler.finish("run-1", [])  # nothing yet
    with handler._lines:
        handler._line("run-1", "a", "built", 10, 1.0)
    time.sleep(0.2)
    assert waiter.is_alive()  # b has not ended
    with handler._lines:
        handler._line("run-1", "b", "failed", None, None)
    waiter.join(5)
    assert not waiter.is_alive() and got == {"a": "built", "b": "failed"}


def test_a_day_of_a_table_is_not_the_table():
    handler = ProgressHandler(2, None)
    handler.partition_of = lambda run: "2026-01-01" if run == "day-run" else None
    with handler._lines:
        handler._line("day-run", "a", "built", 1, 1.0)
    over = threading.Event()
    over.set()  # the run beside is over without a line for the unpartitioned a
    assert handler.wait_for(["a"], over) == {"a": "not run"}
