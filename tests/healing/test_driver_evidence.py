"""The Spark log's word on a driver that died: read even when the dying JVM writes it after
py4j failed, and it decides the class over the symptom the step saw (a reset socket)."""

from __future__ import annotations

import threading
import time

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.healing.diagnosis import Failure, diagnose
from medallion_assets.healing.evidence import DRIVER_GONE, driver_evidence, failure_with_evidence
from medallion_assets.healing.systems import Places
from tests.conftest import REPO

OOM = "26/12/02 17:54:12 ERROR Executor: java.lang.OutOfMemoryError: Java heap space"


def test_the_log_is_read_again_while_the_dying_jvm_still_writes_it(tmp_path):
    log = tmp_path / "spark.log"
    log.write_text("26/12/02 17:54:10 INFO SparkContext: Running Spark\n")

    def late() -> None:
        time.sleep(0.6)
        with log.open("a") as out:
            out.write(OOM + "\n")

    writer = threading.Thread(target=late)
    writer.start()
    found = driver_evidence("ConnectionResetError: [Errno 104] Connection reset by peer", log)
    writer.join()
    assert found == OOM.strip()
    started = time.monotonic()
    assert driver_evidence("SparkContext was shut down", tmp_path / "none.log", 0.3) == ""
    assert time.monotonic() - started < 2
    assert driver_evidence("ValueError: a bad value", log) == ""  # the driver is not gone


def test_out_of_heap_evidence_outranks_the_projects_connection_reset_rule():
    rules = load_catalog(REPO).healing_rules
    reset = ConnectionResetError(104, "Connection reset by peer")
    places = Places("file:/lake", frozenset())
    assert diagnose(rules, Failure.of(reset, places)).error_code == "CONNECTION_RESET"
    found = diagnose(rules, Failure.of(reset, places, OOM))
    assert (found.error_code, found.then) == ("OUT_OF_MEMORY", "fail")
    assert "MEDALLION_SPARK_DRIVER_MEMORY" in found.fix


@pytest.mark.parametrize(
    "told",
    [  # what py4j raises, word for word, when the JVM at the other end of its socket is gone
        "Error while sending",
        "Error while receiving",
        "Error while sending or receiving",
        "Answer from Java side is empty",
        "Gateway is not connected.",
        "An error occurred while trying to connect to the Java server (127.0.0.1:38211)",
        "BrokenPipeError: [Errno 32] Broken pipe",
        "An error occurred while calling o36.collectToPython",  # its error answer cut short
    ],
)
def test_each_way_py4j_says_the_driver_went_away_reads_the_log(tmp_path, told):
    log = tmp_path / "spark.log"
    log.write_text(OOM + "\n")
    assert driver_evidence(told, log, 0) == OOM


def test_a_java_error_with_its_own_trace_is_not_a_driver_gone():
    told = "An error occurred while calling o36.collectToPython.\n: java.lang.ArithmeticException"
    assert not DRIVER_GONE.search(told)


class AnswersOnce(Exception):
    """py4j's error over a JVM that ran out of heap: its text, asked of the JVM, is there the
    first time; the second time the JVM has exited and py4j raises."""

    def __init__(self, text: str):
        super().__init__("An error occurred while calling o36.collectToPython")
        self.text: str | None = text

    def __str__(self) -> str:
        text, self.text = self.text, None
        if text is None:
            raise ConnectionRefusedError(111, "Connection refused")
        return text


def test_an_error_whose_driver_dies_after_its_first_answer_is_still_out_of_memory(tmp_path):
    told = (
        "An error occurred while calling o36.collectToPython.\n: org.apache.spark.SparkException:"
        " Job aborted due to stage failure: Task 0 in stage 0.0 failed 1 times, most recent "
        "failure: Lost task 0.0 in stage 0.0 (TID 0) (localhost executor driver): "
        "java.lang.OutOfMemoryError: Java heap space\n\tat java.base/java.nio.HeapByteBuffer"
    )
    log = tmp_path / "spark.log"
    log.write_text("26/12/05 02:26:45 INFO nothing of memory\n")
    places = Places("file:/lake", frozenset())
    failure = failure_with_evidence(AnswersOnce(told), places, log)
    found = diagnose(load_catalog(REPO).healing_rules, failure)
    assert (found.error_code, found.then, failure.system) == ("OUT_OF_MEMORY", "fail", "spark")
    # and when the first answer is already the dead driver's, the log says it
    log.write_text(OOM + "\n")
    gone = AnswersOnce(told)
    str(gone)
    failure = failure_with_evidence(gone, places, log)
    assert diagnose((), failure).error_code == "OUT_OF_MEMORY"
    assert failure.message == OOM
