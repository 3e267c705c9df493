"""PySpark's loggers are made without another thread ever seeing PySparkLogger as the
process's logger class (which made Dagster's console logger fail a run before its first step)."""

from __future__ import annotations

import logging
import threading

from pyspark.logger import PySparkLogger

from medallion_assets.runtime import pyspark_loggers


def _seen_classes_while(make: object, rounds: int = 3000) -> set[type]:
    """The logger classes this thread sees while another makes PySpark loggers ``rounds`` times."""
    stop = threading.Event()
    seen: set[type] = set()

    def maker() -> None:
        for i in range(rounds):
            make(f"medallion.test.pyspark.{i % 7}")  # type: ignore[operator]
        stop.set()

    thread = threading.Thread(target=maker)
    thread.start()
    while not stop.is_set():
        seen.add(logging.getLoggerClass())
    thread.join()
    seen.add(logging.getLoggerClass())
    return seen


def test_loggers_made_by_get_logger_are_pyspark_loggers_and_no_thread_sees_a_swap():
    assert _seen_classes_while(pyspark_loggers.get_logger) == {logging.Logger}
    logger = pyspark_loggers.get_logger("medallion.test.pyspark.0")
    assert isinstance(logger, PySparkLogger)
    assert pyspark_loggers.get_logger("medallion.test.pyspark.0") is logger
    assert type(logging.getLogger("medallion.test.plain")) is logging.Logger


def test_install_makes_pysparks_calls_safe():
    pyspark_loggers.install()
    assert _seen_classes_while(PySparkLogger.getLogger) == {logging.Logger}
    assert isinstance(PySparkLogger.getLogger("SQLQueryContextLogger"), PySparkLogger)
