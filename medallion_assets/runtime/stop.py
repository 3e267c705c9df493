"""Stopping a run from outside: Ctrl-C (SIGINT), SIGTERM, a closed terminal (SIGHUP), or its
Spark driver's JVM gone (killed, out of memory). Every one ends the same way: no step starts
after it, the running steps' Spark jobs are cancelled, nothing half-written is published (a
staged write that was not published stays off ``main``), and the command says in one line
what stopped it and exits 130 (Ctrl-C), 143 (SIGTERM) or 1 (SIGHUP, the driver gone).

The first request is what stopped the run; later ones change nothing. While a Dagster run
executes, a signal only sets the request, which its executor loop acts on between events
(raising in the middle of a write to the event log could leave a run half-recorded);
elsewhere (loading the project, starting Spark, between runs) it raises ``RunStopped`` at
once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_NAMES = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
_EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}

_state: dict[str, Any] = {"requested": None, "deferred": 0, "installed": False}
_lock = threading.Lock()


@dataclass(frozen=True)
class Stop:
    """What stopped the run (a signal, or its Spark driver gone), and the command's exit code."""

    reason: str
    exit_code: int = 1
    signum: int | None = None

    @classmethod
    def by_signal(cls, signum: int) -> Stop:
        code = _EXIT_CODES.get(signal.Signals(signum), 1)
        return cls(f"stopped by {describe(signum)}", code, signum)


class RunStopped(KeyboardInterrupt):
    """The run was stopped from outside; ``exit_code`` is the command's."""

    def __init__(self, stop: Stop):
        super().__init__(stop.reason)
        self.stop = stop

    @property
    def exit_code(self) -> int:
        return self.stop.exit_code

    def __str__(self) -> str:
        return self.stop.reason


def describe(signum: int) -> str:
    """The signal as a person knows it.

    >>> describe(15), describe(2)
    ('SIGTERM', 'Ctrl-C (SIGINT)')
    """
    return _NAMES.get(signal.Signals(signum), signal.Signals(signum).name)


def request(signum: int) -> None:
    """Record a signal's request to stop (the first request is kept)."""
    request_stop(Stop.by_signal(signum))


def request_stop(stop: Stop) -> None:
    """Record a request to stop (the first one is kept): a signal, or the Spark driver gone
    (under ``stop_on_signals`` only: elsewhere the run's own failure says it)."""
    with _lock:
        if _state["requested"] is None and (stop.signum is not None or _state["installed"]):
            _state["requested"] = stop


def requested() -> Stop | None:
    """What asked the process to stop, if anything did."""
    return _state["requested"]  # type: ignore[no-any-return]


def raise_if_requested() -> None:
    """``RunStopped`` when a stop was requested: between runs and steps."""
    stop = requested()
    if stop is not None:
        raise RunStopped(stop)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    request(signum)
    if not _state["deferred"]:
        raise RunStopped(requested() or Stop.by_signal(signum))


def note_interrupt() -> None:
    """A run's executor heard Dagster's own capture of an interrupt (which takes SIGINT and
    SIGTERM while a run starts and ends): under ``stop_on_signals`` it is this command's stop
    (as Ctrl-C: Dagster's capture does not say which signal it was); in a process of Dagster's
    (a run terminated from the UI) it stops that run only."""
    if _state["installed"]:
        request(signal.SIGINT)


@contextmanager
def _handlers() -> Iterator[None]:
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    try:
        for s in SIGNALS:
            signal.signal(s, _on_signal)
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into a stop of this command for the duration (main
    thread only; elsewhere a no-op); the previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state["requested"] = None
    try:
        with _handlers():
            _state["installed"] = True
            yield
    finally:
        _state["installed"] = False
        _state["requested"] = None  # a RunStopped raised out of it carries it


@contextmanager
def deferred() -> Iterator[None]:
    """Within it a signal only records the request: the caller checks ``requested()`` at
    points where stopping leaves everything consistent (a run's executor loop). Under
    ``stop_on_signals``, on the main thread, this command's handlers are put back for the
    duration (Dagster's capture of interrupts replaced them as the run started)."""
    with _lock:
        _state["deferred"] += 1
    try:
        if _state["installed"] and threading.current_thread() is threading.main_thread():
            with _handlers():
                yield
        else:
            yield
    finally:
        with _lock:
            _state["deferred"] -= 1


__all__ = [
    "RunStopped",
    "Stop",
    "deferred",
    "describe",
    "note_interrupt",
    "raise_if_requested",
    "request",
    "request_stop",
    "requested",
    "stop_on_signals",
]
