"""Rate budgets shared by every step, run and host using a system, leased in slices.

A ``SharedBucket`` is one dimension (rows, bytes or requests) of one system's budget. The
budget lives in a ledger every process sees (the control store: ``throttles/rate_budgets.py``)
as the time up to which the rate is reserved. A step leases a slice, about ``lease_seconds``
of the rate, with one atomic statement, sleeps until the slice's time has come (less
``burst_seconds``: an idle system lets that much through at once) and hands the slice out
locally, so a loop moving batches of rows does not hit the database per batch. Later takers
queue behind it, in whatever process or host.

The rate is re-read every ``refresh_seconds`` (``LiveLimits``): an operator's
``medallion control throttle`` or a self-healing cut prices the next slice, so it reaches a
running step within about a second and one slice. One bucket object is safe to share between
threads; threads with their own objects share through the ledger like processes do::

    live = LiveLimits(lambda: Throttle(rows_per_second=50_000))
    rows = SharedBucket(ledger, "redshift", "rows", live)
    rows.acquire(10_000)  # seconds waited
    rows.close()  # the unused part of the slice goes back to the ledger
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

from medallion_assets.catalog.models import Throttle

Clock = Callable[[], float]
Sleep = Callable[[float], None]

DIMENSIONS = ("rows", "bytes", "requests")
LEASE_SECONDS = 0.05  # a slice: at most 20 statements/s per system and dimension, all takers
BURST_SECONDS = 0.1  # an idle system lets this much of its rate through at once
REFRESH_SECONDS = 1.0  # how stale a rate may be: an operator's change lands within this
LOCAL_TTL_SECONDS = 1.0  # a slice unspent this long is dropped: no burst after an idle spell


def rate_of(limits: Throttle, dimension: str) -> float | None:
    """The per-second limit of ``dimension`` (rows, bytes, requests) in ``limits``."""
    if dimension not in DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}: use one of {', '.join(DIMENSIONS)}")
    rate: float | None = getattr(limits, f"{dimension}_per_second")
    return rate


class RateLedger(Protocol):
    """Where the shared budget lives (``throttles.rate_budgets.RateBudgets``)."""

    def lease(self, system: str, dimension: str, amount: float, rate: float) -> float:
        """Reserve ``amount`` at ``rate`` behind every earlier reservation; return the seconds
        from now until it is paid (below zero: the budget was idle that long)."""
        ...

    def give_back(self, system: str, dimension: str, amount: float, rate: float) -> None:
        """Return ``amount`` reserved at ``rate`` and not spent."""
        ...


class LiveLimits:
    """A system's limits as they are now, re-read at most every ``refresh_seconds``."""

    def __init__(
        self,
        read: Callable[[], Throttle],
        *,
        refresh_seconds: float = REFRESH_SECONDS,
        clock: Clock = time.monotonic,
    ):
        self._read, self._refresh, self._clock = read, refresh_seconds, clock
        self._lock = threading.Lock()
        self._limits = read()
        self._read_at = clock()

    @property
    def refresh_seconds(self) -> float:
        return self._refresh

    def current(self) -> Throttle:
        with self._lock:
            if self._clock() - self._read_at >= self._refresh:
                self._limits = self._read()
                self._read_at = self._clock()
            return self._limits


class SharedBucket:
    """One dimension of a system's budget, shared through ``ledger``; see the module docstring."""

    def __init__(
        self,
        ledger: RateLedger,
        system: str,
        dimension: str,
        limits: LiveLimits,
        *,
        lease_seconds: float = LEASE_SECONDS,
        burst_seconds: float = BURST_SECONDS,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
    ):
        rate_of(limits.current(), dimension)  # a bad dimension fails here, not mid-run
        self.system, self.dimension = system, dimension
        self._ledger, self._limits = ledger, limits
        self._lease_seconds, self._burst_seconds = lease_seconds, burst_seconds
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()  # one taker at a time: they queue in the lock's order
        self._local = 0.0  # leased, not yet handed out
        self._local_rate: float | None = None  # the rate it was leased at
        self._leased_at = 0.0

    def rate(self) -> float | None:
        """The rate in force now (None: unlimited)."""
        return rate_of(self._limits.current(), self.dimension)

    def acquire(self, amount: float = 1.0) -> float:
        """Block until ``amount`` is ours; return the seconds waited."""
        if amount < 0:
            raise ValueError(f"amount must be >= 0, got {amount}")
        started = self._clock()
        with self._lock:
            rate = self.rate()
            if rate is None or amount == 0:
                return 0.0
            if self._clock() - self._leased_at > LOCAL_TTL_SECONDS:
                self._local = 0.0
            if self._local >= amount:
                self._local -= amount
                return 0.0
            lease = max(amount - self._local, rate * self._lease_seconds)
            ahead = self._ledger.lease(self.system, self.dimension, lease, rate)
            self._local += lease - amount
            self._local_rate = rate
            self._wait(ahead - self._burst_seconds)
            self._leased_at = self._clock()  # the slice is ours once paid for
        return self._clock() - started

    def close(self) -> None:
        """Give the unspent part of the slice back, for the other steps to use."""
        with self._lock:
            if self._local > 0 and self._local_rate is not None:
                self._ledger.give_back(self.system, self.dimension, self._local, self._local_rate)
            self._local = 0.0

    def _wait(self, seconds: float) -> None:
        """Sleep ``seconds``, in steps of at most ``refresh_seconds``: a rate lifted meanwhile
        (``--reset`` of a system without a rate in systems.yaml) ends the wait."""
        end = self._clock() + seconds
        while (left := end - self._clock()) > 0:
            if self.rate() is None:
                return
            self._sleep(min(left, self._limits.refresh_seconds))

    def __repr__(self) -> str:
        return f"SharedBucket({self.system!r}, {self.dimension!r})"
