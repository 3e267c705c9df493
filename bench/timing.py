"""Timing helpers shared by every benchmark.

Fairness rules applied to every tool alike: imports and a warm-up call happen before the
clock starts; ``gc.collect()`` runs before each timed call and the collector stays enabled
(its default state) during it; the clock is ``time.perf_counter``.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds taken by one call of ``fn`` (after a full collection), and its result."""
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def repeat(fn: Callable[[], Any], reps: int, budget_s: float | None = None) -> list[float]:
    """Time ``fn`` up to ``reps`` times; stop early once ``budget_s`` is spent (1 rep at least)."""
    times: list[float] = []
    for _ in range(reps):
        seconds, _ = timed(fn)
        times.append(seconds)
        if budget_s is not None and sum(times) >= budget_s:
            break
    return times


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(pct / 100 * len(ordered))))
    return ordered[rank - 1]
