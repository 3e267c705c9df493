"""A step holds its table's build lock (one per partition it builds) while it builds,
publishes and loads the warehouse, so two runs never build the same table at once.

The second run's step waits (``MEDALLION_LOCK_WAIT_SECONDS``, default 15 minutes), saying for
whom in its log and the audit log; once it has the lock, the table the first run published is
current and built from the same code and inputs, so the build is skipped as unchanged. When the
wait runs out the step is skipped (not failed: nothing is wrong with the table, another run is
building it), and so is what depends on it in this run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import dagster as dg

from medallion_assets.catalog import Dataset
from medallion_assets.control_plane import ControlPlane
from medallion_assets.runtime.locks import Holder, build_locks, table_lock_name
from medallion_assets.runtime.table_run import step_partitions
from medallion_assets.settings import MedallionSettings


def partitions_of(context: dg.AssetExecutionContext, dataset: Dataset) -> list[str | None]:
    """The partitions the step builds, in order (``runtime.table_run.step_partitions``)."""
    keys = context.partition_keys if context.has_partition_key_range else None
    key = context.partition_key if context.has_partition_key else None
    return step_partitions(dataset.settings.partitions, key, keys)


@contextmanager
def build_lock(
    context: dg.AssetExecutionContext,
    dataset: Dataset,
    plane: ControlPlane,
    settings: MedallionSettings,
) -> Iterator[bool]:
    """Hold the locks of every partition the step builds (in sorted order, so two steps of
    one table cannot deadlock); yields False when they could not all be taken in time.
    ``settings``: the run's, read when its resources were set up."""
    partitions = sorted(partitions_of(context, dataset), key=lambda p: p or "")
    locks = build_locks(plane.url, settings.state_home)
    store = plane.store()
    holder = Holder.now(context.run.run_id)
    wait = settings.lock_wait_seconds
    with ExitStack() as stack:
        for partition in partitions:
            name = table_lock_name(dataset.name, partition)
            waited: list[Holder | None] = []

            def on_wait(
                other: Holder | None, name: str = name, waited: list[Holder | None] = waited
            ) -> None:
                waited.append(other)
                who = other.describe() if other is not None else "another run"
                message = (
                    f"waiting up to {wait:.0f} s for {name}: {who} is building it; "
                    "its result is reused when it matches this run's code and inputs"
                )
                context.log.warning(message)
                store.record("wait", f"dataset:{dataset.name}", message, run_id=holder.run_id)

            if not stack.enter_context(locks.hold(name, holder, wait, on_wait)):
                message = (
                    f"skipped: {name} is still being built by another run after {wait:.0f} s "
                    "(MEDALLION_LOCK_WAIT_SECONDS); its current version stays published"
                )
                context.log.warning(message)
                store.record("busy", f"dataset:{dataset.name}", message, run_id=holder.run_id)
                yield False
                return
            if waited:
                context.log.info(f"{name}: the other run is done; going on")
        yield True
