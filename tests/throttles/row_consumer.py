"""A step moving rows through a system's throttle on a thread, for the tests that change the
rate under it and read the rate it got in a window of time."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from medallion_assets.throttles.throttle import SystemThrottle


class RowConsumer:
    """Takes ``batch`` rows at a time from ``throttle`` while in its ``with`` block, noting
    when each batch passed (``time.monotonic``)."""

    def __init__(self, throttle: SystemThrottle, batch: int):
        self.throttle, self.batch = throttle, batch
        self.passed: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._consume)

    def __enter__(self) -> RowConsumer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def wait_started(self, timeout: float = 60.0) -> float:
        """Wait until the first batch passed (the first lease opens the store's connection,
        slow on a busy machine) and return when it did."""
        deadline = time.monotonic() + timeout
        while not self.passed:
            assert time.monotonic() < deadline, f"no batch passed in {timeout} s"
            time.sleep(0.01)
        return self.passed[0]

    def rows(self, start: float, end: float) -> int:
        """Rows that passed from ``start`` to ``end``."""
        return self.batch * sum(1 for at in self.passed if start <= at < end)

    def rate(self, start: float, end: float) -> float:
        """Rows per second from ``start`` to ``end``."""
        return self.rows(start, end) / (end - start)

    def _consume(self) -> None:
        while not self._stop.is_set():
            self.throttle.rows(self.batch)
            self.passed.append(time.monotonic())
