"""What the Spark log adds to a failure the driver's death hides.

When the JVM runs out of heap, Spark's handler shuts the driver down: the step sees only "Job 0
cancelled because SparkContext was shut down" (or py4j's lost connection), and the
``OutOfMemoryError`` is in the Spark log alone. Its lines are the evidence that classifies the
failure as OUT_OF_MEMORY rather than a retry into the same wall.

>>> driver_evidence("Job 0 cancelled because SparkContext was shut down", None)
''
>>> bool(DRIVER_GONE.search("ConnectionResetError: [Errno 104] Connection reset by peer"))
True
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from medallion_assets.errors import NO_ANSWER
from medallion_assets.healing.diagnosis import Failure
from medallion_assets.healing.systems import OUT_OF_MEMORY, Places

DRIVER_GONE = re.compile(
    r"SparkContext was shut down|Answer from Java side is empty"
    r"|SparkContext has been shutdown|Cannot call methods on a stopped SparkContext"
    # py4j's socket to a JVM that is exiting (under load, before py4j says more)
    r"|\[Errno 104\] Connection reset by peer|\[Errno 111\] Connection refused"
    r"|\[Errno 32\] Broken pipe|Error while (?:sending|receiving)|Gateway is not connected"
    r"|An error occurred while trying to connect to the Java server"
    # py4j's error answer cut short: the JVM died while it was writing it
    r"|An error occurred while calling o\d+\.\w+$"
    # py4j's error raised, then the JVM died before it could say what the error was
    rf"|{re.escape(NO_ANSWER)}",
    re.MULTILINE,
)
TAIL_BYTES = 2_000_000


def driver_evidence(message: str, spark_log: Path | None, settle_s: float = 3.0) -> str:
    """The Spark log's out-of-memory lines (at most three, from its last 2 MB) when
    ``message`` says the driver went away; "" otherwise or when the log has none. A dying JVM
    may still be writing them when py4j already failed: the log is read again for up to
    ``settle_s`` seconds before it is taken to have none."""
    if spark_log is None or not DRIVER_GONE.search(message):
        return ""
    deadline = time.monotonic() + settle_s
    while True:
        found = _out_of_memory_lines(spark_log)
        if found or time.monotonic() >= deadline:
            return found
        time.sleep(0.25)


def failure_with_evidence(
    error: BaseException, places: Places | None, spark_log: Path | None
) -> Failure:
    """What ``error`` says, with the Spark log's out-of-memory lines as its evidence when it
    says the driver went away. The error's text is asked for once: py4j asks the JVM for it,
    and a JVM that ran out of heap may answer the first time and be gone the second, when all
    that is left is "An error occurred while calling o36.collectToPython"."""
    failure = Failure.of(error, places)
    return failure.with_evidence(driver_evidence(failure.message, spark_log), places)


def _out_of_memory_lines(spark_log: Path) -> str:
    try:
        with spark_log.open("rb") as log:
            size = log.seek(0, 2)
            log.seek(max(0, size - TAIL_BYTES))
            tail = log.read().decode("utf-8", "replace")
    except OSError:
        return ""
    found = [line.strip() for line in tail.splitlines() if OUT_OF_MEMORY.search(line)]
    return "\n".join(dict.fromkeys(found[-3:]))
