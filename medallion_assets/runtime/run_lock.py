"""The project's run lock: one ``medallion run`` at a time on a project.

Apart from ``adapters.headless`` (which imports Dagster) so the CLI can take the lock, and
start the Spark driver behind it, before Dagster's import: the two then overlap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from medallion_assets.control_plane import ControlPlane
from medallion_assets.runtime.locks import Holder, build_locks
from medallion_assets.settings import MedallionSettings


class RunInProgress(RuntimeError):
    """Another ``medallion run`` kept this project busy for longer than this one would wait."""


@contextmanager
def one_run_at_a_time(
    settings: MedallionSettings, project: str, log: Callable[[str], None], wait_seconds: float
) -> Iterator[None]:
    """Hold the project's run lock for a whole ``medallion run``.

    Why a project-level lock on top of the per-table build locks: two whole-project runs at
    once would contend table by table (each waiting for the other's build, then skipping it)
    while each holds a Spark JVM; queueing the second behind the first ends the same way (it
    finds everything built and skips it, or builds what arrived meanwhile), with one Spark at
    a time and a log that says plainly what it waits for. The table locks still keep runs
    from ``dagster dev``, schedules and backfills off a table this run is building.
    """
    plane = ControlPlane.of(settings)
    locks = build_locks(plane.url, settings.state_home)

    def on_wait(other: Holder | None) -> None:
        who = f" ({other.describe()})" if other is not None else ""
        message = (
            f"another medallion run{who} is running on this project; waiting up to "
            f"{wait_seconds:.0f} s for it to finish..."
        )
        log(message)
        plane.store().record("wait", "run", message, run_id="")

    with locks.hold(f"run:{project}", Holder.now(""), wait_seconds, on_wait) as held:
        if not held:
            raise RunInProgress(
                f"another medallion run is still running on this project after "
                f"{wait_seconds:.0f} s; try again later (or raise --wait)"
            )
        yield
