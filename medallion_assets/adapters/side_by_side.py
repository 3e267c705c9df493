"""Runs of one process side by side on a Dagster instance (``medallion run``'s days beside the
rest): whether they may, and the block that runs work on a thread beside its own."""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import dagster as dg


def side_by_side(instance: dg.DagsterInstance) -> bool:
    """Whether runs of this process may execute at once on ``instance``. Dagster sets up each
    run's logs with ``logging.config.dictConfig``, which closes every handler under the logging
    module's lock: a run logging meanwhile deadlocks. Without ``python_logs`` handlers (the
    project's instance has none) the call is skipped; with them, or on an ephemeral instance
    (one SQLite connection), the runs go one after another."""
    if instance.is_ephemeral or instance.get_python_log_dagster_handler_config():
        return False
    instance.get_yaml_python_handlers = list  # type: ignore[method-assign]  # none to set up
    return True


@contextmanager
def run_beside(work: Callable[[], None] | None) -> Iterator[None]:
    """Run ``work`` on a thread while the block runs; its error is raised after both end."""
    if work is None:
        yield
        return
    errors: list[BaseException] = []

    def target() -> None:
        try:
            work()
        except BaseException as error:  # raised on the calling thread below
            errors.append(error)

    thread = threading.Thread(target=target, name="medallion-days", daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if errors:
        raise errors[0]
