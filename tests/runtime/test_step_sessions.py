"""Each step gets a Spark session of its own over the run's one Spark: steps on parallel threads
never see each other's temp views or SQL settings, and their jobs go to the FAIR pool of their
table's criticality, weighted as the profile ranks it."""

from __future__ import annotations

import os
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from medallion_assets.runtime.spark_jobs import beside, cancel_run_jobs, run_job_tag
from medallion_assets.runtime.spark_session import (
    JVM_CLASSES,
    SparkWarmUp,
    fair_pools,
    pool_weights,
    step_session,
)
from medallion_assets.settings import MedallionSettings


def test_the_pools_file_gives_each_criticality_its_weight(tmp_path: Path):
    path = fair_pools(tmp_path, {"critical": 10, "normal": 1, "low": 0})
    pools = {p.get("name"): p for p in ET.parse(path).getroot()}
    assert {name: int(p.findtext("weight")) for name, p in pools.items()} == {
        "critical": 10,
        "normal": 1,
        "low": 1,  # never 0: a pool of weight 0 would starve while any other pool has work
    }
    # inside a pool too: a later step's job gets the next freed task thread (see below)
    assert {p.findtext("schedulingMode") for p in pools.values()} == {"FAIR"}


def test_every_criticality_has_a_pool_with_profiles_or_without(demo_catalog):
    """A step runs in its table's criticality's pool: each is declared, else Spark warns."""
    assert pool_weights(None) == {"critical": 1, "high": 1, "normal": 1, "low": 1}
    weights = pool_weights(demo_catalog.profiles)
    assert set(weights) == {"critical", "high", "normal", "low"}
    assert weights["critical"] > weights["low"]


@pytest.mark.slow
def test_steps_on_threads_keep_their_views_settings_and_pools_apart(spark, tmp_path: Path):
    settings = MedallionSettings.from_env({"MEDALLION_SPARK_SHUFFLE_PARTITIONS": "3"}, tmp_path)
    assert spark.sparkContext.getConf().get("spark.scheduler.mode") == "FAIR"
    seen: dict[str, tuple[list[int], str | None, str, str | None]] = {}
    barrier = threading.Barrier(2)

    def step(name: str, pool: str, value: int) -> None:
        session = step_session(spark, settings, pool, label=f"gold.{name}")
        session.sql(f"SELECT {value} AS v").createOrReplaceTempView("input_rows")
        session.sql(f"SET spark.sql.ansi.enabled = {'true' if value == 1 else 'false'}")
        barrier.wait()  # both views exist, under the same name, before either reads
        rows = [r.v for r in session.sql("SELECT v FROM input_rows").collect()]
        context = session.sparkContext
        pool_now = context.getLocalProperty("spark.scheduler.pool")
        # the Spark UI and its event log say which table each job is for
        described = context.getLocalProperty("spark.job.description")
        seen[name] = (rows, pool_now, session.conf.get("spark.sql.ansi.enabled"), described)

    threads = [
        threading.Thread(target=step, args=("a", "critical", 1)),
        threading.Thread(target=step, args=("b", "low", 2)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {
        "a": ([1], "critical", "true", "gold.a"),
        "b": ([2], "low", "false", "gold.b"),
    }
    assert "input_rows" not in [t.name for t in spark.catalog.listTables()]
    assert step_session(spark, settings, "x").conf.get("spark.sql.shuffle.partitions") == "3"


SLOW_QUERY = (  # twenty one-second tasks in the query's first stage: running when cancelled
    "SELECT count(*) AS n FROM range(0, 20, 1, 20) "
    "WHERE coalesce(reflect('java.lang.Thread', 'sleep', CAST(1000 AS BIGINT)), '') <> 'x'"
)


def _sleeping(tracker, group: str) -> bool:
    """A job of ``group`` has tasks running now (not a short job between two of its jobs:
    cancelling by tag then would find nothing to cancel and the next job would run)."""
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        if job is not None and job.status == "RUNNING":
            stages = (tracker.getStageInfo(s) for s in job.stageIds)
            if any(stage is not None and stage.numActiveTasks > 0 for stage in stages):
                return True
    return False


@pytest.mark.slow
def test_cancelling_a_runs_jobs_leaves_the_jobs_of_a_run_beside_it(spark, tmp_path: Path):
    """Two runs of one process (a medallion run's days beside the rest): terminating one
    cancels the Spark jobs its steps tagged, never the other run's."""
    settings = MedallionSettings.from_env({}, tmp_path)
    outcome: dict[str, str] = {}
    started = threading.Barrier(3)

    def step(run_id: str, pool: str) -> None:
        session = step_session(spark, settings, pool, run_job_tag(run_id))
        # a group only to watch the run's jobs by; the cancel goes by the step's tag
        session.sparkContext.setJobGroup(run_id, run_id, interruptOnCancel=True)
        started.wait()
        try:
            outcome[run_id] = str(session.sql(SLOW_QUERY).collect()[0].n)
        except Exception as error:  # the cancelled one
            outcome[run_id] = "cancelled" if "cancel" in str(error).lower() else str(error)

    threads = [
        threading.Thread(target=step, args=(r, p))
        for r, p in (("run-a", "low"), ("run-b", "normal"))
    ]
    for thread in threads:
        thread.start()
    started.wait()
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 60
    both = ("run-a", "run-b")
    while not all(_sleeping(tracker, r) for r in both) and time.monotonic() < deadline:
        time.sleep(0.2)  # until both runs' tasks are running
    assert all(_sleeping(tracker, r) for r in both), "the two jobs never ran at the same time"
    cancel_run_jobs("run-a")  # what a terminated run does
    for thread in threads:
        thread.join()
    assert outcome == {"run-a": "cancelled", "run-b": "20"}


def test_work_beside_a_step_runs_as_the_steps_own_and_is_cancelled_with_its_run(
    spark, tmp_path: Path
):
    """A step's work started beside it (the ingest stages its quarantine beside its table)
    runs on another thread with the step's pool and description, and its jobs carry the
    step's run tag: a terminated run cancels them too."""
    settings = MedallionSettings.from_env({}, tmp_path)
    found: dict[str, object] = {}

    def step() -> None:  # a thread of its own, as a step's: its Spark properties stay there
        session = step_session(spark, settings, "critical", run_job_tag("run-c"), "bronze.x")
        context = session.sparkContext
        found["seen"] = beside(
            session,
            lambda: (
                threading.current_thread().name,
                context.getLocalProperty("spark.scheduler.pool"),
                context.getLocalProperty("spark.job.description"),
                session.sql("SELECT 7 AS n").collect()[0].n,
            ),
        ).result(timeout=60)
        context.setJobGroup("run-c", "run-c", interruptOnCancel=True)  # to watch its jobs by
        slow = beside(session, lambda: session.sql(SLOW_QUERY).collect())
        tracker, deadline = spark.sparkContext.statusTracker(), time.monotonic() + 60
        while not _sleeping(tracker, "run-c") and time.monotonic() < deadline:
            time.sleep(0.2)
        found["ran"] = _sleeping(tracker, "run-c")
        cancel_run_jobs("run-c")
        try:
            slow.result(timeout=60)
            found["ended"] = "finished"
        except Exception as error:
            found["ended"] = "cancelled" if "cancel" in str(error).lower() else str(error)

    thread = threading.Thread(target=step, name="medallion-step-bronze.x")
    thread.start()
    thread.join()
    assert found == {
        "seen": ("medallion-step-bronze.x-beside", "critical", "bronze.x", 7),
        "ran": True,
        "ended": "cancelled",
    }


def _sleeping_query(tasks: int, millis: int) -> str:
    return (
        f"SELECT count(*) AS n FROM range(0, {tasks}, 1, {tasks}) "
        f"WHERE coalesce(reflect('java.lang.Thread', 'sleep', CAST({millis} AS BIGINT)), '') <> 'x'"
    )


@pytest.mark.slow
def test_a_step_beside_a_long_one_of_its_criticality_is_not_starved(spark, tmp_path: Path):
    """Two steps of one criticality (one pool): the first's job has three waves of 5-second
    tasks for every task thread. The second step's one-task job, started while the first wave
    runs, gets the first thread that frees (FAIR inside the pool; first-come would hand every
    freed thread to the first job's later waves) and ends while the first job still runs. Its
    planning may take seconds on a loaded machine: a freed thread later than the first wave's
    still comes before the last wave's. The default master gives two task threads per core."""
    threads_per_core = spark.sparkContext.defaultParallelism / (os.cpu_count() or 1)
    assert threads_per_core == 2
    settings = MedallionSettings.from_env({}, tmp_path)
    slots = spark.sparkContext.defaultParallelism
    ended: dict[str, float] = {}
    long_started = threading.Event()

    def step(name: str, query: str) -> None:
        session = step_session(spark, settings, "normal", run_job_tag(name))
        session.sparkContext.setJobGroup(name, name)
        if name == "short":
            long_started.wait()
        session.sql(query).collect()
        ended[name] = time.monotonic()

    long = threading.Thread(target=step, args=("long", _sleeping_query(3 * slots, 5000)))
    short = threading.Thread(target=step, args=("short", _sleeping_query(1, 10)))
    long.start()
    short.start()
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 60
    while not _sleeping(tracker, "long") and time.monotonic() < deadline:
        time.sleep(0.1)
    long_started.set()
    long.join()
    short.join()
    assert ended["short"] < ended["long"] - 1, "the second step waited for the first one's job"


@pytest.mark.slow
def test_the_warm_up_starts_the_driver_the_first_step_then_finds(spark, tmp_path: Path):
    """With the session of the test run already up, a warm-up finds it (getOrCreate) and a
    step's session comes from the same SparkContext: nothing is started twice."""
    settings = MedallionSettings.from_env({}, tmp_path)
    warm_up = SparkWarmUp(settings, pool_weights(None))
    warm_up.wait()
    assert warm_up.error is None
    assert step_session(spark, settings, "low").sparkContext is spark.sparkContext


@pytest.mark.slow
def test_the_classes_the_warm_up_readies_are_in_the_projects_spark(spark):
    """A class renamed by a Spark upgrade would make the warm-up a silent no-op (its first use
    then costs the first step using lower() or upper() 1-5 s again): each must be there."""
    loader = spark._jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for name in JVM_CLASSES:
        assert spark._jvm.java.lang.Class.forName(name, False, loader).getName() == name
