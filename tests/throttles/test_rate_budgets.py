"""Rate budgets shared through the control store, on SQLite and on a real PostgreSQL server:
two processes moving rows on one system keep TOGETHER to its rows/s, threads of one process
share it, an operator's throttle and a self-healing cut reach a running step within about a
second, and a consumer blocked on the budget waits instead of failing."""

from __future__ import annotations

import multiprocessing
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from medallion_assets.catalog.models import Throttle
from medallion_assets.control.store import ControlStore
from medallion_assets.throttles.rate_budgets import RateBudgets, shared_throttle
from tests.throttles.row_consumer import RowConsumer

if TYPE_CHECKING:
    from multiprocessing.queues import Queue
    from multiprocessing.synchronize import Barrier

    from medallion_assets.throttles.throttle import SystemThrottle

RATE = 20_000.0  # rows/s of the system under test
BATCH = 200  # rows moved per take: a hundred takes a second, ten leases
TOLERANCE = 0.05


@dataclass(frozen=True)
class Moved:
    """What one consumer moved: rows between two wall-clock times (comparable across
    processes of one machine)."""

    rows: int
    start: float
    end: float


def move_rows(throttle: SystemThrottle, seconds: float, batch: int = BATCH) -> Moved:
    """Take rows in batches for ``seconds``, as a step loading a table does."""
    start = time.time()
    rows = 0
    while time.time() - start < seconds:
        throttle.rows(batch)
        rows += batch
    end = time.time()
    throttle.close()
    return Moved(rows, start, end)


def together(moved: list[Moved]) -> float:
    """The rows/s all consumers achieved together, from the first start to the last end."""
    elapsed = max(m.end for m in moved) - min(m.start for m in moved)
    return sum(m.rows for m in moved) / elapsed


def _consumer(url: str, seconds: float, ready: Barrier, results: Queue[Moved]) -> None:
    throttle = shared_throttle(ControlStore.open(url), "redshift", Throttle(rows_per_second=RATE))
    ready.wait(timeout=120)  # both processes imported and connected: start together
    results.put(move_rows(throttle, seconds))


@pytest.mark.slow  # spawns processes that import the package (about 10 s)
def test_two_processes_on_one_system_keep_together_to_its_rows_per_second(url: str):
    ControlStore.open(url)  # migrated once, before the processes race to it
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(2)
    results: Queue[Moved] = context.Queue()
    processes = [
        context.Process(target=_consumer, args=(url, 4.0, ready, results)) for _ in range(2)
    ]
    for process in processes:
        process.start()
    moved = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    rate = together(moved)
    alone = [m.rows / (m.end - m.start) for m in moved]
    print(f"2 processes at {RATE:.0f} rows/s: together {rate:.0f} rows/s; each {alone}")
    # One budget, not two: never above it. A busy machine may keep the processes below it (CI
    # at 31 min measured 94%), but not starved (a lease one holds from the other would halve it).
    assert 0.8 * RATE < rate <= (1 + TOLERANCE) * RATE
    # Each got a real share: neither ran alone while the other waited out the test.
    assert min(m.rows for m in moved) > 0.25 * sum(m.rows for m in moved)


@pytest.mark.slow
def test_threads_of_one_process_share_the_budget(url: str):
    store = ControlStore.open(url)
    declared = Throttle(rows_per_second=RATE)
    one = shared_throttle(store, "redshift", declared)  # two threads on one object
    throttles = [one, one, shared_throttle(store, "redshift", declared)]
    moved: list[Moved] = []

    def consume(throttle: SystemThrottle) -> None:
        # Takes twice a step's: three threads of one process share the GIL, and on a loaded
        # machine (CI at 21 min) the per-take overhead of 200-row takes kept them at 77%.
        moved.append(move_rows(throttle, 3.0, batch=2 * BATCH))

    threads = [threading.Thread(target=consume, args=(t,)) for t in throttles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rate = together(moved)
    print(f"3 threads at {RATE:.0f} rows/s: together {rate:.0f} rows/s")
    # One budget, not three: never above it; a busy machine may keep the threads below it,
    # but not starved (a share that blocks another's lease would leave them far below).
    assert 0.7 * RATE < rate <= (1 + TOLERANCE) * RATE
    assert min(m.rows for m in moved) > 0.1 * sum(m.rows for m in moved)


def _rates_through_three_changes(url: str) -> list[float]:
    """A consumer's rows/s in the windows of its budget: before, throttled by an override, cut
    by the system, and after the override is reset."""
    store = ControlStore.open(url)
    throttle = shared_throttle(store, "redshift", Throttle(rows_per_second=RATE))
    with RowConsumer(throttle, batch=50) as consumer:  # a window of a second holds dozens
        consumer.wait_started()
        time.sleep(1.0)
        before = time.monotonic()  # the window before ends here, not after the override's write
        RateBudgets(store).set_override("redshift", {"rows_per_second": RATE / 4}, "test", "oncall")
        throttled = time.monotonic()
        time.sleep(2.2)
        store.state.cut_throttle("redshift", time.time(), "REDSHIFT_WLM_FULL", "run-1")
        cut = time.monotonic()
        time.sleep(2.2)
        RateBudgets(store).reset_override("redshift", "over", "oncall")
        reset = time.monotonic()
        time.sleep(2.2)
    # Each change is in force from at most a second (the re-read) after it on.
    return [
        consumer.rate(before - 0.7, before),  # past the first burst
        consumer.rate(throttled + 1.3, cut),
        consumer.rate(cut + 1.3, reset),
        consumer.rate(reset + 1.3, reset + 2.2),
    ]


@pytest.mark.slow  # watches the rate through three changes (about 7 s, twice at most)
def test_a_throttle_and_a_cut_reach_a_running_consumer_within_a_second(url: str):
    # The budget is a ceiling: never above it, on every attempt. A busy machine may keep the
    # consumer below it (CI once measured 10,071 rows/s under 20,000, and once 1,924 under
    # 5,000 beside a Spark build), so the floor only has to tell a window from its neighbour
    # (above the ceiling of the lower limit before or after it), on one of two attempts: a
    # change that reached the consumer late, or never, fails both.
    # The cut halves the operator's rate; once the override is reset, systems.yaml's halved.
    limits = [RATE, RATE / 4, RATE / 8, RATE / 2]
    floors = [1.1 * RATE / 4, 1.1 * RATE / 8, 0.3 * RATE / 8, 1.1 * RATE / 8]
    attempts = []
    for _ in range(2):
        rates = _rates_through_three_changes(url)
        print(f"rows/s before, throttled, cut, reset: {[round(r) for r in rates]}")
        attempts.append(rates)
        assert all(r <= 1.1 * limit for r, limit in zip(rates, limits, strict=True)), rates
        if all(floor < r for r, floor in zip(rates, floors, strict=True)):
            return
    pytest.fail(f"a window below its floor {floors} on both attempts: {attempts}")


@pytest.mark.slow  # watches the rate for four seconds
def test_a_steep_throttle_does_not_make_a_step_wait_out_a_slice_leased_at_the_old_rate(url: str):
    store = ControlStore.open(url)
    throttle = shared_throttle(store, "redshift", Throttle(rows_per_second=50_000))
    # slices of 2,500 rows at 50,000 rows/s, taken 100 at a time
    with RowConsumer(throttle, batch=100) as consumer:
        consumer.wait_started()
        time.sleep(0.5)
        RateBudgets(store).set_override("redshift", {"rows_per_second": 500}, "WLM full", "oncall")
        changed = time.monotonic()
        time.sleep(3.5)
    # From a second and a half on: 500 rows/s, neither a stall on the 2,500-row slice
    # (5 s at 500/s) nor that slice spent at once after it. A busy machine may hold the consumer
    # for a moment (CI saw one half second with no batch, then the rate again): the bounds are
    # on the two seconds together, on any half second's burst, and on the longest gap.
    start, end = changed + 1.5, changed + 3.5
    per_half_second = [
        consumer.rows(t, t + 0.5) for t in (start, start + 0.5, start + 1.0, start + 1.5)
    ]
    passed = [at for at in consumer.passed if start <= at < end]
    gaps = [b - a for a, b in zip([start, *passed], [*passed, end], strict=True)]
    print(
        f"rows per half second after the throttle: {per_half_second}; longest gap {max(gaps):.2f} s"
    )
    assert 600 <= sum(per_half_second) <= 1_100  # 1,000 at 500 rows/s
    assert max(per_half_second) <= 400  # no slice spent at once
    assert max(gaps) < 1.5  # no wait for the old slice (5 s)


def test_a_consumer_blocked_on_the_budget_waits_instead_of_failing(url: str):
    store = ControlStore.open(url)
    throttle = shared_throttle(store, "s3_vendor", Throttle(requests_per_second=20))
    started = time.monotonic()
    waited = sum(throttle.requests() for _ in range(30))
    elapsed = time.monotonic() - started
    # 30 requests at 20/s, 2 passing at once (a tenth of a second's burst): 1.4 s of waiting,
    # never less; more on a busy machine (a lease a request at this rate, each a round trip).
    assert 1.4 - 0.05 <= elapsed < 3.0
    assert waited == pytest.approx(elapsed, abs=0.1)
    assert throttle.usage().requests == 30


def test_a_system_without_rates_never_touches_the_budget(url: str):
    store = ControlStore.open(url)
    throttle = shared_throttle(store, "spark", Throttle(max_concurrent_jobs=6))
    assert throttle.rows(10**9) + throttle.bytes(10**12) + throttle.requests(10**6) == 0.0
    assert store.query("SELECT count(*) FROM rate_budgets") == [(0,)]


def test_the_rates_in_force_are_the_operators_over_systems_yaml_then_cut(url: str):
    store = ControlStore.open(url)
    declared = Throttle(max_concurrent_jobs=4, rows_per_second=1000, bytes_per_second=10**6)
    budgets = RateBudgets(store)
    assert budgets.limits("redshift", declared, time.time()) == declared
    budgets.set_override("redshift", {"rows_per_second": 200}, "slow dashboards", "oncall")
    budgets.set_override("redshift", {"requests_per_second": 5}, "and fewer queries", "oncall")
    limits = budgets.limits("redshift", declared, time.time())
    assert (limits.rows_per_second, limits.bytes_per_second, limits.requests_per_second) == (
        200,
        10**6,
        5,
    )
    store.state.cut_throttle("redshift", time.time(), "WLM full")
    limits = budgets.limits("redshift", declared, time.time())
    assert (limits.max_concurrent_jobs, limits.rows_per_second, limits.requests_per_second) == (
        2,
        100,
        2.5,
    )
    cleared = budgets.reset_override("redshift", "quiet again", "oncall")
    assert cleared is not None and cleared.rates() == {
        "rows_per_second": 200,
        "requests_per_second": 5,
    }
    assert budgets.reset_override("redshift", "again", "oncall") is None
    assert budgets.limits("redshift", declared, time.time()).rows_per_second == 500
    messages = [
        e.message for e in store.audit(entities=["system:redshift"]) if e.kind == "throttle"
    ]
    assert messages[0] == "redshift throttled to rows/s 200 by oncall: slow dashboards"
    assert (
        messages[1] == "redshift throttled to rows/s 200, requests/s 5 by oncall: and fewer queries"
    )
    assert messages[-1] == (
        "redshift back to its systems.yaml rates (was rows/s 200, requests/s 5) by oncall: "
        "quiet again"
    )
    with pytest.raises(ValueError, match="positive"):
        budgets.set_override("redshift", {"rows_per_second": 0}, "no", "oncall")
