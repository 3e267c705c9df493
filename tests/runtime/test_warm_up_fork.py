"""The Spark warm-up forks (pyspark launches the JVM through ``Popen`` with a ``preexec_fn``,
which runs the process's at-fork hooks) while the main thread imports Dagster. A library that
pairs a before-fork hook with an after-fork one and is first imported during that fork runs
only the second half: filelock (Dagster's dependency) then prints a KeyError traceback on
the user's console. The fork is held open here so the race is certain, not one run in many."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, subprocess, sys, threading, time
    from medallion_assets.runtime import spark_session as module
    from medallion_assets.settings import MedallionSettings

    assert "filelock" not in sys.modules, "the test needs filelock not yet imported"
    forking = threading.Event()

    def slow_fork_start():  # the fork's before-hooks, held open
        if threading.current_thread().name == "spark-warm-up":
            forking.set()
            time.sleep(1.0)

    os.register_at_fork(before=slow_fork_start)

    def launch(settings, weights):  # the JVM's launch: a fork with a preexec_fn
        subprocess.run(["true"], preexec_fn=lambda: None, check=True)
        raise RuntimeError("no driver in this test")

    module.spark_session = launch
    warm_up = module.SparkWarmUp(MedallionSettings(project_root=sys.argv[1]), {})
    forking.wait(10)
    import dagster  # what the CLI's main thread does meanwhile
    warm_up.wait()
    print("error:", warm_up.error)
    """
)


def test_dagster_imported_while_the_warm_up_forks_prints_no_traceback(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "error: no driver in this test" in done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    assert "Exception ignored" not in done.stderr, done.stderr
