"""The threaded executor on plain Dagster assets (no Spark): steps whose upstream is done run
at the same time up to ``max_workers``, an instance pool limit still caps its steps, order
follows the sort key, failures skip downstream, retries are retried."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from contextlib import nullcontext

import dagster as dg
import pytest

from medallion_assets.adapters.threads import ThreadedExecutor, execute_on_threads

Spans = dict[str, tuple[float, float]]


def sleeper(name: str, spans: Spans, deps: list[str] = (), pool: str | None = None, **kw):
    @dg.asset(name=name, deps=list(deps), pool=pool, **kw)
    def _asset() -> None:
        started = time.monotonic()
        time.sleep(0.4)
        spans[name] = (started, time.monotonic())

    return _asset


def overlapping(spans: Spans, a: str, b: str) -> bool:
    return spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]


def run(
    assets: list[dg.AssetsDefinition],
    executor: ThreadedExecutor,
    instance: dg.DagsterInstance | None = None,
) -> dg.ExecuteInProcessResult:
    job = dg.Definitions(assets=assets).resolve_implicit_global_asset_job_def()
    keys = [key for a in assets for key in a.keys]
    with dg.instance_for_test() if instance is None else nullcontext(instance) as used:
        return execute_on_threads(job, keys, None, used, executor, tags={}, run_config={})


def diamond(spans: Spans, pool: str | None = None) -> list[dg.AssetsDefinition]:
    return [
        sleeper("root", spans),
        sleeper("left", spans, ["root"], pool=pool),
        sleeper("right", spans, ["root"], pool=pool),
        sleeper("tip", spans, ["left", "right"]),
    ]


def test_ready_steps_run_together_up_to_max_workers():
    spans: Spans = {}
    result = run(diamond(spans), ThreadedExecutor(2))
    assert result.success
    assert overlapping(spans, "left", "right")
    assert spans["root"][1] <= min(spans["left"][0], spans["right"][0])  # upstream first
    assert max(spans["left"][1], spans["right"][1]) <= spans["tip"][0]


@pytest.mark.slow
def test_one_worker_runs_one_step_at_a_time():
    spans: Spans = {}
    assert run(diamond(spans), ThreadedExecutor(1)).success
    assert not overlapping(spans, "left", "right")


@pytest.mark.slow
def test_an_instance_pool_limit_caps_its_steps_across_workers():
    spans: Spans = {}
    with dg.instance_for_test() as instance:
        instance.event_log_storage.set_concurrency_slots("warehouse", 1)
        assert run(diamond(spans, pool="warehouse"), ThreadedExecutor(2), instance).success
    assert not overlapping(spans, "left", "right")


class Ranked:
    """An ordering by a fixed rank per step, and a cap of one running step of ``solo``."""

    def __init__(self, ranks: dict[str, float], solo: frozenset[str] = frozenset()):
        self.ranks, self.solo = ranks, solo

    def key(self, step_key: str, running) -> float:
        return self.ranks.get(step_key, 1.0)

    def may_start(self, step_key: str, running) -> bool:
        return step_key not in self.solo or not self.solo & set(running)


def test_the_ordering_decides_which_ready_step_starts_first():
    spans: Spans = {}
    assets = [sleeper(n, spans) for n in ("a_low", "b_low", "z_critical")]
    assert run(assets, ThreadedExecutor(1, Ranked({"z_critical": 0.0}))).success
    assert min(spans, key=lambda n: spans[n][0]) == "z_critical"


def test_a_step_the_ordering_holds_waits_for_room_then_runs():
    # Two workers, but "left" and "right" share a system with room for one: never together.
    spans: Spans = {}
    order = Ranked({}, solo=frozenset({"left", "right"}))
    assert run(diamond(spans), ThreadedExecutor(2, order)).success
    assert not overlapping(spans, "left", "right")
    assert set(spans) == {"root", "left", "right", "tip"}


def test_a_failed_step_skips_its_downstream_and_the_rest_still_runs():
    spans: Spans = {}

    @dg.asset(name="broken")
    def broken() -> None:
        raise RuntimeError("boom")

    assets = [broken, sleeper("after", spans, ["broken"]), sleeper("beside", spans)]
    result = run(assets, ThreadedExecutor(2))
    assert not result.success
    assert set(spans) == {"beside"}
    failed = [e.step_key for e in result.all_events if e.is_step_failure]
    assert failed == ["broken"]


def test_a_step_asking_for_a_retry_is_run_again():
    attempts: list[int] = []

    @dg.asset(name="flaky")
    def flaky(context) -> None:  # no annotation: Dagster reads it, and these are strings
        attempts.append(context.retry_number)
        if context.retry_number == 0:
            raise dg.RetryRequested(max_retries=1)

    assert run([flaky], ThreadedExecutor(2)).success
    assert attempts == [0, 1]


def test_steps_run_off_the_main_thread():
    where: list[threading.Thread] = []

    @dg.asset(name="where")
    def located() -> None:
        where.append(threading.current_thread())

    assert run([located], ThreadedExecutor(2)).success
    assert where and where[0] is not threading.main_thread()


def test_max_workers_below_one_is_refused():
    with pytest.raises(ValueError, match="at least 1"):
        ThreadedExecutor(0)


# In a fresh interpreter: the step records whether SQLAlchemy's ORM was imported before it ran.
ORM_BEFORE_STEPS = """
import sys
import dagster as dg
from medallion_assets.adapters.threads import ThreadedExecutor, execute_on_threads

seen = []

@dg.asset
def first() -> None:
    seen.append("sqlalchemy.orm" in sys.modules)

job = dg.Definitions(assets=[first]).resolve_implicit_global_asset_job_def()
assert "sqlalchemy.orm" not in sys.modules, "imported before the run: the test proves nothing"
with dg.instance_for_test() as instance:
    executor = ThreadedExecutor(2)
    execute_on_threads(job, [first.key], None, instance, executor, tags={}, run_config={})
print(seen)
"""


def test_sqlalchemys_orm_is_imported_before_a_step_thread_can_race_the_main_thread():
    """A step's first lake access imports sqlalchemy.orm (pyiceberg's SQL catalog) while the
    main thread claims pool slots through SQLAlchemy's inspection, which reaches into a
    half-imported sqlalchemy.orm: a run of `dagster dev` failed so ("partially initialized
    module 'sqlalchemy.orm.exc'"). The executor imports it before any step starts."""
    done = subprocess.run(
        [sys.executable, "-c", ORM_BEFORE_STEPS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[True]"
