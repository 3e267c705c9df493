"""Stopping a run from outside the process: Ctrl-C (SIGINT), SIGTERM, a closed terminal
(SIGHUP). Every one ends the same way: no step starts after it, the running steps' Spark jobs
are cancelled, nothing half-written is published (a staged write that was not published
stays off ``main``), and the command says in one line what stopped it and exits 130 (Ctrl-C),
143 (SIGTERM) or 1.

The first signal is what stopped the run; later ones change nothing. While a Dagster run
executes, the signal only sets the request, which its executor loop acts on between events
(raising in the middle of a write to the event log could leave a run half-recorded);
elsewhere (loading the project, starting Spark, between runs) it raises ``RunStopped`` at
once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_NAMES = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}
_EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}

_state: dict[str, Any] = {"requested": None, "deferred": 0, "installed": False}
_lock = threading.Lock()


class RunStopped(KeyboardInterrupt):
    """The run was stopped by a signal; ``exit_code`` is the command's."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES.get(signal.Signals(self.signum), 1)

    def __str__(self) -> str:
        return f"stopped by {describe(self.signum)}"


def describe(signum: int) -> str:
    """The signal as a person knows it.

    >>> describe(15), describe(2)
    ('SIGTERM', 'Ctrl-C (SIGINT)')
    """
    return _NAMES.get(signal.Signals(signum), signal.Signals(signum).name)


def request(signum: int) -> None:
    """Record a request to stop (the first one is kept)."""
    with _lock:
        if _state["requested"] is None:
            _state["requested"] = signum


def requested() -> int | None:
    """The signal that asked the process to stop, if one did."""
    return _state["requested"]  # type: ignore[no-any-return]


def raise_if_requested() -> None:
    """``RunStopped`` when a stop was requested: between runs and steps."""
    signum = requested()
    if signum is not None:
        raise RunStopped(signum)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    request(signum)
    if not _state["deferred"]:
        raise RunStopped(requested() or signum)


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
    "deferred",
    "describe",
    "note_interrupt",
    "raise_if_requested",
    "request",
    "requested",
    "stop_on_signals",
]
