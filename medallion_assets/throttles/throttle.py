"""Rate limits for one source or target system: token buckets plus a concurrency slot.

``SystemThrottle`` turns a system's ``throttle:`` block from ``systems.yaml`` into buckets for
requests, bytes and rows, and counts what passed so a run can report the rate it achieved::

    throttle = SystemThrottle("vendor_s3", Throttle(requests_per_second=50))
    with throttle.slot():
        throttle.requests()          # blocks until a request token is available
    throttle.usage().requests_per_second

The buckets here hold within one process; ``throttles/shared_budget.py``'s ``SharedBucket`` holds a
rate across every step, run and host (``throttles.rate_budgets.shared_throttle`` builds a
``SystemThrottle`` over those). Limits on concurrent steps across processes are Dagster pools.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from medallion_assets.catalog.models import Throttle
from medallion_assets.io.object_store import (
    CHUNK_SIZE,
    ObjectStore,
    OnChunk,
    OnPage,
    S3Object,
    no_progress,
)

Clock = Callable[[], float]
Sleep = Callable[[float], None]


class Bucket(Protocol):
    """Rate-limited tokens: ``TokenBucket`` in one process, ``SharedBucket`` across all."""

    def acquire(self, amount: float = 1.0) -> float: ...
    def close(self) -> None: ...


class TokenBucket:
    """Allow ``rate_per_second`` units on average, with bursts of up to ``burst`` units.

    ``rate_per_second=None`` means unlimited. The default burst is one second's worth (at
    least 1).

    >>> bucket = TokenBucket(100, burst=10)
    >>> bucket.acquire()  # the first 10 pass at once; later ones wait 10 ms each
    0.0
    """

    def __init__(
        self,
        rate_per_second: float | None,
        burst: float | None = None,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
    ):
        if rate_per_second is not None and rate_per_second <= 0:
            raise ValueError(f"rate_per_second must be > 0 or None, got {rate_per_second}")
        if burst is not None and burst <= 0:
            raise ValueError(f"burst must be > 0 or None, got {burst}")
        self.rate_per_second = rate_per_second
        self.burst = max(1.0, burst if burst is not None else (rate_per_second or 1.0))
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst
        self._updated = clock()
        self._lock = threading.Lock()

    def acquire(self, amount: float = 1.0) -> float:
        """Block until ``amount`` units are allowed; return the seconds waited."""
        if amount < 0:
            raise ValueError(f"amount must be >= 0, got {amount}")
        if self.rate_per_second is None or amount == 0:
            return 0.0
        with self._lock:
            now = self._clock()
            elapsed = max(0.0, now - self._updated)
            self._tokens = min(self.burst, self._tokens + elapsed * self.rate_per_second)
            self._updated = now
            # Reserve now, even into debt: a request larger than the burst still passes after
            # its wait instead of deadlocking, and later callers queue behind the debt (FIFO).
            self._tokens -= amount
            wait = max(0.0, -self._tokens / self.rate_per_second)
        if wait > 0:
            # Sleep outside the lock so other threads can reserve their place meanwhile.
            self._sleep(wait)
        return wait

    def close(self) -> None:
        """Nothing to give back: the tokens live in this object."""


@dataclass(frozen=True)
class ThrottleUsage:
    """What passed a ``SystemThrottle`` since its first use, for reporting the measured rate."""

    system: str
    requests: int
    bytes: int
    rows: int
    waited_seconds: float
    elapsed_seconds: float

    def _rate(self, amount: float) -> float:
        return amount / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def requests_per_second(self) -> float:
        return self._rate(self.requests)

    @property
    def bytes_per_second(self) -> float:
        return self._rate(self.bytes)

    @property
    def rows_per_second(self) -> float:
        return self._rate(self.rows)


class SystemThrottle:
    """The limits of one system: requests/s, bytes/s, rows/s and max concurrent jobs.

    ``burst_seconds`` sizes each bucket's burst as that many seconds of its rate. ``buckets``
    (by dimension: rows, bytes, requests) replaces the in-process buckets, e.g. with shared ones.
    """

    def __init__(
        self,
        system: str,
        limits: Throttle,
        *,
        burst_seconds: float = 1.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
        buckets: Mapping[str, Bucket] | None = None,
    ):
        if burst_seconds <= 0:
            raise ValueError(f"burst_seconds must be > 0, got {burst_seconds}")
        self.system = system
        self.limits = limits
        self._clock = clock

        def bucket(dimension: str, rate: float | None) -> Bucket:
            if buckets is not None:
                return buckets[dimension]
            burst = rate * burst_seconds if rate is not None else None
            return TokenBucket(rate, burst, clock=clock, sleep=sleep)

        self._requests = bucket("requests", limits.requests_per_second)
        self._bytes = bucket("bytes", limits.bytes_per_second)
        self._rows = bucket("rows", limits.rows_per_second)
        self._slots = (
            threading.BoundedSemaphore(limits.max_concurrent_jobs)
            if limits.max_concurrent_jobs is not None
            else None
        )
        self._lock = threading.Lock()
        self._counts = {"requests": 0, "bytes": 0, "rows": 0}
        self._waited = 0.0
        self._started: float | None = None

    @classmethod
    def unlimited(cls, system: str) -> SystemThrottle:
        """A throttle that never waits but still counts, for systems without limits."""
        return cls(system, Throttle())

    def requests(self, n: int = 1) -> float:
        """Take ``n`` request tokens; return the seconds waited."""
        return self._take("requests", self._requests, n)

    def bytes(self, n: int) -> float:
        """Take ``n`` byte tokens; return the seconds waited."""
        return self._take("bytes", self._bytes, n)

    def rows(self, n: int) -> float:
        """Take ``n`` row tokens; return the seconds waited."""
        return self._take("rows", self._rows, n)

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one of ``max_concurrent_jobs`` slots of this system in this process."""
        if self._slots is None:
            yield
            return
        self._mark_start()
        started = self._clock()
        self._slots.acquire()
        self._count("slot", 0, self._clock() - started)
        try:
            yield
        finally:
            self._slots.release()

    def usage(self) -> ThrottleUsage:
        """A snapshot of what passed since the first request, byte, row or slot."""
        with self._lock:
            elapsed = self._clock() - self._started if self._started is not None else 0.0
            return ThrottleUsage(
                system=self.system,
                requests=self._counts["requests"],
                bytes=self._counts["bytes"],
                rows=self._counts["rows"],
                waited_seconds=self._waited,
                elapsed_seconds=elapsed,
            )

    def close(self) -> None:
        """Give back what the buckets hold unspent (shared buckets return it to the budget)."""
        for bucket in (self._requests, self._bytes, self._rows):
            bucket.close()

    def _take(self, kind: str, bucket: Bucket, n: int) -> float:
        if n < 0:
            raise ValueError(f"{self.system}: cannot take a negative number of {kind} ({n})")
        self._mark_start()
        waited = bucket.acquire(n)
        self._count(kind, n, waited)
        return waited

    def _mark_start(self) -> None:
        with self._lock:
            if self._started is None:
                self._started = self._clock()

    def _count(self, kind: str, n: int, waited: float) -> None:
        with self._lock:
            if kind in self._counts:
                self._counts[kind] += n
            self._waited += waited

    def __repr__(self) -> str:
        return f"SystemThrottle({self.system!r}, {self.limits!r})"


# --- reduce_parallelism: a temporary cut of a system's limits, kept in the control store -----


def reduced_limits(limits: Throttle, factor: float) -> Throttle:
    """``limits`` scaled by ``factor``; concurrency rounds down but stays at least 1. A limit
    that is not set stays unset: there is nothing to scale."""
    if factor >= 1.0:
        return limits
    values = limits.model_dump()
    for name in ("rows_per_second", "bytes_per_second", "requests_per_second"):
        if values[name] is not None:
            values[name] = values[name] * factor
    if values["max_concurrent_jobs"] is not None:
        values["max_concurrent_jobs"] = max(1, int(values["max_concurrent_jobs"] * factor))
    return Throttle.model_validate(values)


class ThrottledS3:
    """An ``ObjectStore`` within a system's limits: one request token per API call (per page
    when listing) and byte tokens per chunk moved. ``throttle.usage()`` reports the rates."""

    def __init__(
        self, store: ObjectStore, throttle: SystemThrottle, *, chunk_size: int = CHUNK_SIZE
    ):
        self.store, self.throttle, self.chunk_size = store, throttle, chunk_size

    def list(
        self, bucket: str, prefix: str = "", *, on_page: OnPage = no_progress
    ) -> list[S3Object]:
        return self.store.list(
            bucket, prefix, on_page=lambda: (self.throttle.requests(), on_page())
        )

    def download(
        self, bucket: str, key: str, destination: Path, *, on_chunk: OnChunk = no_progress
    ) -> S3Object:
        self.throttle.requests()
        return self.store.download(bucket, key, destination, on_chunk=self._bytes(on_chunk))

    def read(self, bucket: str, key: str, *, on_chunk: OnChunk = no_progress) -> bytes:
        self.throttle.requests()
        return self.store.read(bucket, key, on_chunk=self._bytes(on_chunk))

    def spark_path(self, bucket: str, key: str, size: int = 0) -> str:
        """The object's path for Spark, charged as a read of ``size`` bytes: Spark's executors
        move the bytes, so the tokens are taken here, before they do."""
        self.throttle.requests()
        for start in range(0, size, self.chunk_size):
            self.throttle.bytes(min(self.chunk_size, size - start))
        return self.store.spark_path(bucket, key, size)

    def put(self, bucket: str, key: str, data: bytes) -> S3Object:
        self.throttle.requests()
        for start in range(0, len(data), self.chunk_size):
            self.throttle.bytes(min(self.chunk_size, len(data) - start))
        return self.store.put(bucket, key, data)

    def ensure_bucket(self, bucket: str) -> None:
        self.throttle.requests()
        self.store.ensure_bucket(bucket)

    def _bytes(self, on_chunk: OnChunk) -> OnChunk:
        return lambda size: (self.throttle.bytes(size), on_chunk(size))
