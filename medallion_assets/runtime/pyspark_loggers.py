"""PySpark's loggers made without touching the process's logger class.

``PySparkLogger.getLogger(name)`` (pyspark 4.x) sets the process-wide logger class
(``logging.setLoggerClass``) to ``PySparkLogger``, makes the logger, and sets it back. A
``medallion run`` makes such loggers on other threads than the one creating Dagster's loggers:
the Spark warm-up thread silences the query-context loggers while the main thread starts a
run, and every step thread whose SQL fails has pyspark log the query context. Dagster makes a
run's console logger with ``logging.getLoggerClass()(name, level=...)``; caught in that window
it got ``PySparkLogger``, which takes no ``level``, and the run died before its first step
(``TypeError: PySparkLogger.__init__() got an unexpected keyword argument 'level'``, seen in
benchmark G). Two such calls at once can also leave the class set for good (each restores what
it saw, the second saw the first's).

``get_logger`` gives the same logger, made under ``logging``'s own lock with the logging
manager's class instead (what ``logging.getLogger`` uses to make loggers, read under that
lock), so no other thread ever sees the swap; ``install`` makes pyspark's own calls use it.
"""

from __future__ import annotations

import logging
from typing import cast

from pyspark.logger import PySparkLogger


def get_logger(name: str | None = None) -> PySparkLogger:
    """The ``PySparkLogger`` named ``name``, as ``PySparkLogger.getLogger`` gives it."""
    if name is None:
        return cast("PySparkLogger", logging.getLogger())
    manager = logging.Logger.manager
    # logging's module lock: Manager.getLogger takes it too (a re-entrant lock), so no
    # logger is made on another thread while the manager's class is PySparkLogger.
    with logging._lock:  # type: ignore[attr-defined]
        saved = manager.loggerClass
        manager.loggerClass = PySparkLogger
        try:
            logger = manager.getLogger(name)
        finally:
            manager.loggerClass = saved
    return cast("PySparkLogger", logger)


def install() -> None:
    """Have pyspark make its loggers with ``get_logger`` (idempotent)."""
    PySparkLogger.getLogger = staticmethod(get_logger)  # type: ignore[method-assign]
