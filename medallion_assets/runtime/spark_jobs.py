"""A run's Spark jobs: each step's jobs carry the run's tag (``run_job_tag``), and a run being
stopped cancels its own (``SparkJobs``, the kill switch's ``JobCanceller`` on Spark: the run's
executor calls it while its steps wind down, ``kill_switch/stop.py``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from pyspark import SparkContext
from pyspark.util import inheritable_thread_target

from medallion_assets.jvm import class_lookups

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

T = TypeVar("T")


def run_job_tag(run_id: str) -> str:
    """The tag on every Spark job a run's steps start: a terminated run cancels its own jobs
    only, not those of a run beside it in the process."""
    return f"medallion-run-{run_id}"


class SparkJobs:
    """The ``JobCanceller`` of the process's Spark driver."""

    def cancel_run_jobs(self, run_id: str) -> None:
        cancel_run_jobs(run_id)


def cancel_run_jobs(run_id: str) -> None:
    """Cancel the run's running Spark jobs (those its steps tagged, ``run_job_tag``: a run
    beside it in the process goes on; a classic session; a Spark Connect client's steps end at
    their next call instead)."""

    context = SparkContext._active_spark_context
    # A context still starting (a step opened the session just now) has no JVM side yet, and
    # one being stopped loses it: nothing of the run runs there to cancel, and the stopping
    # loop calls again until its steps have ended. Never raise: the steps must end first.
    if context is None or getattr(context, "_jsc", None) is None:
        return
    try:
        context.cancelJobsWithTag(run_job_tag(run_id))
    except Exception as error:  # the JVM went away: nothing of the run runs there any more
        log.debug("could not cancel the Spark jobs of run %s: %s", run_id, error)


def beside(session: SparkSession, work: Callable[[], T]) -> Future[T]:
    """``work`` started on a thread of its own whose Spark jobs are the calling step's: its
    scheduler pool, its description and its run's tag (a stopped run cancels them too). For
    a step's independent Spark work to run at once, as the ingest's quarantine and table."""
    target = inheritable_thread_target(session)(work)  # the caller's properties, taken now
    done: Future[T] = Future()

    def run() -> None:
        try:
            class_lookups.use_on_this_thread()
            done.set_result(target())
        except BaseException as error:  # the caller meets it in ``result()``
            done.set_exception(error)

    name = f"{threading.current_thread().name}-beside"
    threading.Thread(target=run, name=name, daemon=True).start()
    return done
