"""A run terminated while its first step is still starting Spark: cancelling the run's Spark
jobs then finds a SparkContext with no JVM side yet. It must do nothing rather than raise (a
raise ended the executor's loop with the step still running, so the step never finished as
interrupted and its OpenLineage run never ended)."""

from __future__ import annotations

import subprocess
import sys

import pytest

# In a process of its own: the test run's shared session is long started. A thread starts a
# SparkContext; while it is registered as the active context but its JVM side (``_jsc``) is
# still being made, the run's jobs are cancelled, then once more after it has started.
SCRIPT = """
import threading, time
from pyspark import SparkConf, SparkContext
from medallion_assets.runtime.spark_jobs import cancel_run_jobs

conf = SparkConf().setMaster("local[1]").setAppName("cancel-while-starting")
started = threading.Thread(target=lambda: SparkContext(conf=conf))
started.start()
deadline = time.monotonic() + 120
while SparkContext._active_spark_context is None:
    assert time.monotonic() < deadline, "the context never registered"
    time.sleep(0.001)
caught = getattr(SparkContext._active_spark_context, "_jsc", None) is None
cancel_run_jobs("run-1")
started.join()
cancel_run_jobs("run-1")
SparkContext._active_spark_context.stop()
print("caught starting" if caught else "missed the window")
"""


@pytest.mark.slow  # starts a Spark JVM of its own (about 5 s)
def test_cancelling_a_runs_jobs_while_spark_starts_does_nothing():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # the window is the JVM's start-up (seconds): the cancel landed in it
    assert done.stdout.strip().endswith("caught starting"), done.stdout
