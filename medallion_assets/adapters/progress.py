"""Live progress of a headless run: one line as each table's step ends.

Dagster hands every event of a run to the loggers the run config names. The ``medallion_progress``
logger forwards them to the Python logger ``medallion.progress``; ``run_project`` attaches a
``ProgressHandler`` to it for the run's duration, which prints::

    [ 3/23] bronze.orders                         built        513 rows    4.2 s

Runs launched from the UI do not name the logger, so nothing changes for them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import dagster as dg

from medallion_assets.adapters.run_summary import failure_outcome, first_line, materialized_status
from medallion_assets.adapters.translator import step_table

LOGGER_NAME = "medallion.progress"
LOGGER_KEY = "medallion_progress"


def _progress_logger(_context: dg.InitLoggerContext) -> logging.Logger:
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # only the attached ProgressHandler prints
    return logger


progress_logger = dg.LoggerDefinition(
    _progress_logger,
    description="Forwards a run's events to the Python logger medallion.progress.",
)


class ProgressHandler(logging.Handler):
    """Turns step events into progress lines; ``total`` is the number of steps planned."""

    def __init__(self, total: int, emit_line: Callable[[str], None] | None):
        super().__init__(logging.DEBUG)
        self.total, self.done = total, 0
        # The partition a run executes, by run id (runs of one process may overlap).
        self.partition_of: Callable[[str], str | None] = lambda _run_id: None
        self.emit_line = emit_line or (lambda _line: None)
        self._outcome: dict[tuple[str, str], tuple[str, int | None]] = {}  # (run, table)
        self._seen: dict[str, set[str]] = {}  # run id -> tables with a line
        self._lines = threading.Lock()  # two runs' lines, and finish, from their threads
        # (table, partition) -> how its step ended, for a run waiting on another's tables.
        self._ended: dict[tuple[str, str | None], str] = {}
        self._changed = threading.Condition(self._lines)
        # (run, table) -> (when its step started, the seconds last said): steps under way.
        self._running: dict[tuple[str, str], tuple[float, int]] = {}

    def finish(self, run_id: str, tables: Iterable[str]) -> None:
        """A line for each table of the run that never ran: Dagster does not start a step whose
        upstream step failed, and says so in no event."""
        with self._lines:
            seen = set(self._seen.get(run_id, ()))
            for table in tables:
                if table not in seen:
                    self._line(run_id, table, "not run", None, None)
            self._seen.pop(run_id, None)  # the run is done: its lines are all out

    def wait_for(
        self, tables: Iterable[str], given_up: threading.Event, poll_s: float = 1.0
    ) -> dict[str, str]:
        """Block until the step of each unpartitioned table in ``tables`` has ended in some run
        (its status: built, unchanged, disabled, failed, blocked, not run), or ``given_up`` is
        set (the run that holds them is over: a table it never reported is "not run")."""
        wanted = set(tables)
        with self._changed:
            while not wanted <= {t for t, p in self._ended if p is None}:
                if given_up.is_set():
                    break
                self._changed.wait(poll_s)
            return {t: self._ended.get((t, None), "not run") for t in wanted}

    def still_running(self, now: float) -> None:
        """A line for each step that has run 10 s, then every 30 s: a long step (or the
        first, while Spark starts) is never silence."""
        with self._lines:
            for key, (started, said) in list(self._running.items()):
                ran = now - started
                if ran >= (10 if said == 0 else said + 30):
                    self._running[key] = (started, int(ran))
                    self.emit_line(f"        {self._label(*key)}: running for {int(ran)} s")

    def _label(self, run: str, table: str) -> str:
        """``table``, or ``table[day]`` in a run of one day."""
        partition = self.partition_of(run) if run else None
        return f"{table}[{partition}]" if partition else table

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        if event is None or not event.step_key:
            return
        with self._lines:
            self._event(str(meta.get("run_id") or ""), event)

    def _event(self, run: str, event: Any) -> None:
        kind, table = event.event_type_value, step_table(event.step_key)
        if kind in ("STEP_START", "STEP_RESTARTED"):
            self._running[run, table] = (time.monotonic(), 0)
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE", "STEP_UP_FOR_RETRY"):
            self._running.pop((run, table), None)
        if kind == "ASSET_MATERIALIZATION":
            metadata = event.step_materialization_data.materialization.metadata
            status = materialized_status({k: _value(v) for k, v in metadata.items()})
            self._outcome[run, table] = (status, _value(metadata.get("rows")))
        elif kind == "STEP_SUCCESS":
            status, rows = self._outcome.pop((run, table), ("disabled", None))
            self._line(run, table, status, rows, event.event_specific_data.duration_ms / 1000)
        elif kind == "STEP_FAILURE":
            status, text = failure_outcome(event.step_failure_data)
            self._line(run, table, status, None, None)
            self.emit_line(f"        {first_line(text, 160)}")
        elif kind == "STEP_SKIPPED":
            self._line(run, table, "not run", None, None)
        elif kind == "STEP_UP_FOR_RETRY":
            error = event.event_specific_data.error
            # Dagster's RetryRequested says nothing; the healing's ``Retrying`` it is raised
            # from says what failed and what was done about it.
            said = error.cause if error is not None and error.cause is not None else error
            reason = first_line(said.message if said is not None else "", 300)
            self.emit_line(f"        {table}: retrying: {reason.split('Retrying: ', 1)[-1]}")

    def _line(
        self, run: str, table: str, status: str, rows: int | None, seconds: float | None
    ) -> None:
        self._seen.setdefault(run, set()).add(table)
        self.done += 1
        width = len(str(self.total))
        partition = self.partition_of(run) if run else None
        self._ended[table, partition] = status
        self._changed.notify_all()
        label = self._label(run, table)
        rows_text = "" if rows is None else f"{rows:,} rows"
        time_text = "" if seconds is None else f"{seconds:.1f} s"
        self.emit_line(
            f"[{self.done:>{width}}/{self.total}] {label:<44} {status:<9} {rows_text:>14} "
            f"{time_text:>8}".rstrip()
        )


def _value(entry: Any) -> Any:
    return getattr(entry, "value", entry)


@contextmanager
def reporting_progress(
    total: int, emit_line: Callable[[str], None] | None
) -> Iterator[ProgressHandler]:
    """Attach a ``ProgressHandler`` to the progress logger for the block's duration; without
    ``emit_line`` it prints nothing (and the run does not name the progress logger)."""
    handler = ProgressHandler(total, emit_line)
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(handler)
    done = threading.Event()

    def tick() -> None:
        while not done.wait(1.0):
            handler.still_running(time.monotonic())

    ticker = threading.Thread(target=tick, name="medallion-progress", daemon=True)
    if emit_line is not None:
        ticker.start()
    try:
        yield handler
    finally:
        done.set()
        logger.removeHandler(handler)


def run_config() -> dict[str, Any]:
    """Loggers of a headless run: the console only for what nothing else reports (critical),
    and the progress logger (its handler prints lines only when asked to, and tells a run
    waiting on another's tables when they are done). The full detail stays in the event log."""
    loggers: dict[str, Any] = {"console": {"config": {"log_level": "CRITICAL"}}}
    loggers[LOGGER_KEY] = {}
    return {"loggers": loggers}
