"""A Spark driver that runs out of heap is classified OUT_OF_MEMORY (permanent, with the setting
to raise), not UNCLASSIFIED and retried into the same wall. A real local Spark of 512 MB in a
process of its own, its console in a log file as a run's is: the OutOfMemoryError shuts the
driver down, the step sees only "SparkContext was shut down", and the log says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from pyspark.sql import SparkSession
    from medallion_assets.catalog import load_catalog
    from medallion_assets.healing.diagnosis import diagnose
    from medallion_assets.healing.evidence import failure_with_evidence
    from medallion_assets.healing.systems import Places

    spark = (SparkSession.builder.master("local[1]").config("spark.driver.memory", "512m")
             .config("spark.ui.enabled", "false").getOrCreate())
    try:
        # ~3 GB of rows collected into a 512 MB driver
        spark.range(0, 40_000_000).selectExpr("id", "repeat('x', 64) AS pad").collect()
        print(json.dumps({"error": None}))
    except Exception as error:
        places = Places("file:/lake", frozenset())
        failure = failure_with_evidence(error, places, Path(sys.argv[2]))  # as a step's is
        found = diagnose(load_catalog(sys.argv[1]).healing_rules, failure)
        print(json.dumps({"error": found.error_code, "then": found.then, "fix": found.fix,
                          "system": failure.system, "said": failure.message[:300],
                          # the task's own failure, when the job was aborted for it
                          "task": [l[:500] for l in failure.message.splitlines()
                                   if "most recent" in l]}))
    """
)


def test_a_driver_out_of_heap_is_out_of_memory_with_the_setting_to_raise(tmp_path):
    log = tmp_path / "spark.log"
    with log.open("w") as console:  # the driver JVM's console, as `medallion run` keeps it
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(REPO), str(log)],
            stdout=subprocess.PIPE,
            stderr=console,
            text=True,
            timeout=300,
            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
        )
    assert done.stdout.strip(), (done.returncode, log.read_text()[-3000:])
    found = json.loads(done.stdout.strip().splitlines()[-1])
    # what the step saw first: when it is not classified, that is the case to cover
    assert found["error"] == "OUT_OF_MEMORY", (
        found["said"],
        found["task"],
        log.read_text()[-1500:],
    )
    assert found["then"] == "fail" and found["system"] == "spark"
    assert "MEDALLION_SPARK_DRIVER_MEMORY" in found["fix"]
    # Whether the step's own error names the OutOfMemoryError is a race (the task's failure
    # reaching the job before the JVM exits): classified either way. The Spark log's evidence
    # alone deciding it is tests/healing/test_driver_evidence.py's.


GONE_SCRIPT = textwrap.dedent(
    """
    import json, os, signal
    from pyspark.sql import SparkSession
    from medallion_assets.errors import said
    from medallion_assets.healing.evidence import DRIVER_GONE

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .getOrCreate())
    try:
        spark._jvm.java.util.ArrayList().get(5)  # an error pyspark leaves as py4j raised it
    except Exception as raised:
        error = raised
    os.kill(spark.sparkContext._gateway.proc.pid, signal.SIGKILL)
    spark.sparkContext._gateway.proc.wait()
    told = said(error)
    print(json.dumps({"said": told, "gone": bool(DRIVER_GONE.search(told))}))
    """
)


def test_an_error_whose_driver_died_before_saying_it_still_says_the_driver_is_gone():
    """The race the out-of-heap test can lose under load: py4j raised the job's error, then the
    JVM exited before the error's text was asked for. What is left must still read as a driver
    that went away, so the Spark log is consulted."""
    done = subprocess.run(
        [sys.executable, "-c", GONE_SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    assert done.stdout.strip(), done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["gone"], found
    assert "An error occurred while calling" in found["said"]
