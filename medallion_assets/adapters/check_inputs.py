"""A step whose checks read another table of its run starts beside that table's step, and
waits for it only before its checks.

silver.order_items is built from bronze.orders; its referential-integrity rule reads
silver.orders_usd, which the same run also builds. The rule's table is an asset dependency
(``translator.CHECK_DEP``: the check must read it as this run publishes it), so Dagster would
start order_items only once orders_usd has ended, and the whole build of one waits for the
other's while a core idles. Here the executor (``threads.py``) lets such a step start as soon
as everything else it depends on is done and the tables only its checks read are being built
(their steps running, none of them itself waiting): it stages its output beside them, and its
checks wait for them (``wait_for_check_inputs``, called by the runtime before the checks).
Once those steps have ended, the checks read what they published; when one of them did not
publish (it failed, or the run was stopped), the waiting step publishes nothing and ends as
"not run", as Dagster would have left it.

No cycle can wait on itself: the catalog refuses a cycle through check dependencies
(``catalog.dependencies``), and a step is released only onto steps running and not waiting, so
a step that runs never waits on a step that cannot start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import dagster as dg
from dagster import DagsterEvent, DagsterEventType

from medallion_assets.adapters.dagster_internals import (
    ActiveExecution,
    ExecutionPlan,
    drop_dependencies,
    pending_dependencies,
)
from medallion_assets.adapters.translator import CHECK_DEP

_WAIT_SECONDS = 0.2


@dataclass
class CheckInputs:
    """One run's steps whose checks read tables other steps of the run build."""

    waits_on: Mapping[str, frozenset[str]]  # step key -> steps of the tables only its checks read
    released: dict[str, frozenset[str]] = field(default_factory=dict)  # started before these
    published: dict[str, bool] = field(default_factory=dict)  # steps that ended: published?
    waiting: set[str] = field(default_factory=set)
    changed: threading.Condition = field(default_factory=threading.Condition)

    @classmethod
    def of(cls, job: dg.JobDefinition, plan: ExecutionPlan) -> CheckInputs:
        """From the asset specs of the steps ``plan`` executes: each step's dependencies
        marked as its checks' alone, among those steps."""
        graph = job.asset_layer.asset_graph
        step_of: dict[dg.AssetKey, str] = {}
        for step in plan.get_steps_to_execute_in_topo_order():
            for output in step.step_outputs:
                key = output.properties.asset_key if output.properties else None
                if key is not None and output.properties.asset_check_key is None:
                    step_of[key] = step.key
        checks_only: dict[str, set[dg.AssetKey]] = {}
        regular: dict[str, set[dg.AssetKey]] = {}
        for key, step_key in step_of.items():
            for dep in graph.assets_def_for_key(key).get_asset_spec(key).deps:
                marked = (dep.metadata or {}).get(CHECK_DEP) == "check"
                (checks_only if marked else regular).setdefault(step_key, set()).add(dep.asset_key)
        waits_on = {}
        for step_key, keys in checks_only.items():
            steps = {step_of[k] for k in keys if k in step_of} - {step_key}
            steps -= {step_of[k] for k in regular.get(step_key, ()) if k in step_of}
            if steps:
                waits_on[step_key] = frozenset(steps)
        return cls(waits_on)

    def release(self, active: ActiveExecution, running: Collection[str]) -> None:
        """Let each step that waits only on running steps for its checks start now (the
        executor calls this before it asks Dagster for ready steps, with a worker free)."""
        with self.changed:
            busy = set(running) - self.waiting
            for step_key, checked in self.waits_on.items():
                if step_key in self.released:
                    continue
                pending = pending_dependencies(active, step_key)
                if pending is None:
                    continue  # started, skipped or abandoned already
                early = (checked & pending) - self.published.keys()
                others = pending - checked
                if not early or not early <= busy or any(not self.published.get(s) for s in others):
                    continue  # what its SQL reads is not done, or a checked table is not running
                if any(self.published.get(s) is False for s in checked):
                    continue  # a checked table did not publish: Dagster does not run it
                drop_dependencies(active, step_key, early)
                self.released[step_key] = early

    def ended(self, step_key: str, events: Iterable[DagsterEvent]) -> None:
        """A step's thread is done: whether it published (a step up for retry has not ended)."""
        kinds = {event.event_type for event in events}
        if DagsterEventType.STEP_UP_FOR_RETRY in kinds:
            return
        with self.changed:
            self.published[step_key] = DagsterEventType.STEP_SUCCESS in kinds
            self.changed.notify_all()

    def wait(self, step_key: str, stopping: Callable[[], bool]) -> tuple[str, ...]:
        """Wait until the steps ``step_key`` was released before have ended; those of them
        that did not publish. Returns at once for a step that was not released early;
        a run being stopped ends the wait (the caller then stops as its run does)."""
        with self.changed:
            early = self.released.get(step_key, frozenset())
            self.waiting.add(step_key)
            try:
                while not early <= self.published.keys() and not stopping():
                    self.changed.wait(_WAIT_SECONDS)
            finally:
                self.waiting.discard(step_key)
            return tuple(sorted(s for s in early if not self.published.get(s)))


_runs: dict[str, CheckInputs] = {}
_runs_lock = threading.Lock()


@contextmanager
def registered(run_id: str, inputs: CheckInputs) -> Iterator[CheckInputs]:
    """``inputs`` as the run's, for its steps' ``wait_for_check_inputs``, while it executes."""
    with _runs_lock:
        _runs[run_id] = inputs
    try:
        yield inputs
    finally:
        with _runs_lock:
            _runs.pop(run_id, None)


def wait_for_check_inputs(
    run_id: str, step_key: str, stopping: Callable[[], bool]
) -> tuple[str, ...]:
    """For a step about to check its output: wait for the steps of its run it started beside;
    the step keys of those that did not publish (none: its checks read what the run left)."""
    with _runs_lock:
        inputs = _runs.get(run_id)
    return inputs.wait(step_key, stopping) if inputs is not None else ()
