"""Token buckets and system throttles: exact behaviour on a fake clock, the rate on a real one."""

from __future__ import annotations

import threading
import time

import pytest

from medallion_assets.catalog.models import Throttle
from medallion_assets.throttles.throttle import SystemThrottle, TokenBucket


class FakeClock:
    """A clock that only moves when someone sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def bucket(clock: FakeClock, rate: float | None, burst: float | None = None) -> TokenBucket:
    return TokenBucket(rate, burst, clock=clock, sleep=clock.sleep)


def test_unlimited_bucket_never_waits(clock: FakeClock) -> None:
    unlimited = bucket(clock, None)
    assert sum(unlimited.acquire(1_000_000) for _ in range(100)) == 0.0
    assert clock.now == 0.0


def test_burst_passes_at_once_then_requests_wait_at_the_rate(clock: FakeClock) -> None:
    limited = bucket(clock, 100, burst=10)
    assert [limited.acquire() for _ in range(10)] == [0.0] * 10
    assert limited.acquire() == pytest.approx(0.01)
    for _ in range(189):
        limited.acquire()
    # 200 requests at 100/s with a burst of 10: the last 190 are spaced 10 ms apart.
    assert clock.now == pytest.approx(1.9)


def test_idle_time_refills_tokens_but_never_beyond_the_burst(clock: FakeClock) -> None:
    limited = bucket(clock, 10, burst=5)
    for _ in range(5):
        limited.acquire()
    clock.sleep(60)
    assert [limited.acquire() for _ in range(5)] == [0.0] * 5
    assert limited.acquire() == pytest.approx(0.1)


def test_amount_larger_than_the_burst_goes_into_debt_instead_of_deadlocking(
    clock: FakeClock,
) -> None:
    limited = bucket(clock, 10, burst=5)
    assert limited.acquire(50) == pytest.approx(4.5)
    # The debt is paid off exactly at the end of the wait; the next unit waits its own share.
    assert limited.acquire(1) == pytest.approx(0.1)


def test_default_burst_is_one_seconds_worth_and_at_least_one() -> None:
    assert TokenBucket(100).burst == 100
    assert TokenBucket(0.2).burst == 1
    assert TokenBucket(None).burst == 1


@pytest.mark.parametrize(
    ("rate", "burst", "message"),
    [(0, None, "rate_per_second"), (-1, None, "rate_per_second"), (10, 0, "burst")],
)
def test_invalid_bucket_settings_are_rejected(rate: float, burst: float | None, message: str):
    with pytest.raises(ValueError, match=message):
        TokenBucket(rate, burst)


def test_negative_amount_is_rejected(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="amount"):
        bucket(clock, 10).acquire(-1)


@pytest.mark.slow
def test_measured_rate_stays_within_the_limit_across_threads() -> None:
    limited = TokenBucket(100, burst=10)
    started = time.monotonic()

    def worker() -> None:
        for _ in range(50):
            limited.acquire()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    measured = (200 - 10) / elapsed  # requests beyond the burst, per second
    print(f"200 requests at 100/s, burst 10: {elapsed:.3f} s, {measured:.1f}/s beyond the burst")
    assert elapsed >= 1.9 - 0.01
    assert measured <= 100 * 1.01
    assert elapsed < 3.0  # generous: a loaded 2-core machine still gets the lock round


def test_system_throttle_takes_from_each_bucket_and_counts_what_passed(clock: FakeClock) -> None:
    limits = Throttle(requests_per_second=10, bytes_per_second=100, rows_per_second=1000)
    throttle = SystemThrottle("vendor_s3", limits, clock=clock, sleep=clock.sleep)
    assert throttle.requests(5) == 0.0
    assert throttle.bytes(300) == pytest.approx(2.0)
    assert throttle.rows(1000) == 0.0
    usage = throttle.usage()
    assert (usage.system, usage.requests, usage.bytes, usage.rows) == ("vendor_s3", 5, 300, 1000)
    assert usage.waited_seconds == pytest.approx(2.0)
    assert usage.elapsed_seconds == pytest.approx(2.0)
    assert usage.bytes_per_second == pytest.approx(150.0)


def test_burst_seconds_sizes_every_bucket(clock: FakeClock) -> None:
    limits = Throttle(requests_per_second=100)
    throttle = SystemThrottle("s3", limits, burst_seconds=0.1, clock=clock, sleep=clock.sleep)
    assert throttle.requests(10) == 0.0
    assert throttle.requests() == pytest.approx(0.01)


def test_unlimited_system_never_waits_but_still_counts() -> None:
    throttle = SystemThrottle.unlimited("local_files")
    assert throttle.requests(10_000) + throttle.bytes(10**12) + throttle.rows(10**9) == 0.0
    with throttle.slot(), throttle.slot():  # no concurrency limit either
        pass
    usage = throttle.usage()
    assert (usage.requests, usage.bytes, usage.rows) == (10_000, 10**12, 10**9)
    assert usage.waited_seconds == 0


def test_usage_before_any_traffic_reports_zero_rates() -> None:
    usage = SystemThrottle.unlimited("idle").usage()
    assert (usage.elapsed_seconds, usage.requests_per_second, usage.bytes_per_second) == (0, 0, 0)


def test_negative_counts_name_the_system() -> None:
    with pytest.raises(ValueError, match="vendor_s3: cannot take a negative number of bytes"):
        SystemThrottle.unlimited("vendor_s3").bytes(-1)


def test_slot_limits_concurrent_jobs_within_the_process() -> None:
    throttle = SystemThrottle("warehouse", Throttle(max_concurrent_jobs=2))
    lock, running, peak = threading.Lock(), [0], [0]

    def job() -> None:
        with throttle.slot():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=job) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert peak[0] == 2
    # Six 50 ms jobs two at a time: the later ones waited for a slot, and that is reported.
    assert throttle.usage().waited_seconds >= 0.1


def test_slot_is_released_when_the_job_fails() -> None:
    throttle = SystemThrottle("warehouse", Throttle(max_concurrent_jobs=1))
    with pytest.raises(RuntimeError), throttle.slot():
        raise RuntimeError("load failed")
    with throttle.slot():  # would block forever if the failed job kept its slot
        pass


def test_reduce_parallelism_halves_the_system_limits_a_step_builds_until_it_expires(
    tmp_path, monkeypatch, demo_catalog
):
    import time

    from medallion_assets.adapters.resources import S3Resource
    from medallion_assets.control_plane import ControlPlane
    from medallion_assets.healing.actions import HealingContext, reduce_parallelism
    from medallion_assets.healing.diagnosis import Diagnosis, Failure
    from medallion_assets.lake import Lake
    from medallion_assets.runtime.table_run import TableRun

    monkeypatch.setenv("MEDALLION_HOME", str(tmp_path))
    monkeypatch.delenv("MEDALLION_LAKE", raising=False)
    monkeypatch.delenv("MEDALLION_CONTROL_URL", raising=False)
    throttles = {n: s.throttle.model_dump() for n, s in demo_catalog.systems.items()}
    s3 = S3Resource(project_root=str(tmp_path), throttles=throttles)
    before = s3.store("s3_raw").throttle.limits
    store = ControlPlane.from_env({"MEDALLION_HOME": str(tmp_path)}, tmp_path).store()
    run = TableRun(
        catalog=demo_catalog,
        dataset=demo_catalog.datasets["bronze.orders"],
        lake=Lake.local(tmp_path / "lake"),
        run_id="run-1",
        control=store,
    )
    context = HealingContext(
        run,
        Diagnosis("S3_THROTTLED", "s3_slow_down", ("reduce_parallelism",)),
        Failure(("OSError",), "SlowDown"),
        1,
        None,
    )
    assert reduce_parallelism(context) == "limits cut for an hour: s3_raw to 0.5x"
    after = s3.store("s3_raw").throttle.limits
    assert after.requests_per_second == before.requests_per_second / 2
    assert after.max_concurrent_jobs == max(1, before.max_concurrent_jobs // 2)
    for _ in range(5):
        reduce_parallelism(context)
    assert s3.store("s3_raw").throttle.limits.requests_per_second == before.requests_per_second / 8
    (cut,) = store.state.throttle_cuts()
    assert (cut.system, cut.factor, cut.run_id) == ("s3_raw", 0.125, "run-1")
    assert cut.reason == "S3_THROTTLED in bronze.orders"
    cuts = [e for e in store.audit() if e.kind == "throttle"]
    assert [e.details["factor"] for e in cuts] == [0.5, 0.25, 0.125, 0.125, 0.125, 0.125]
    assert all(e.entity == "system:s3_raw" and e.run_id == "run-1" for e in cuts)
    later = time.time() + 3601  # the hour has passed
    monkeypatch.setattr(time, "time", lambda: later)
    assert s3.store("s3_raw").throttle.limits == before
    assert reduce_parallelism(context) == "limits cut for an hour: s3_raw to 0.5x"  # anew
