"""The project instance's run coordinator: Dagster's queued run coordinator that gives a run
submitted without ``medallion/profile`` (launched from the UI, a backfill's run) the
``dagster/priority`` and ``medallion/profile`` its request would have had, before it is queued,
and, once it is queued, applies the focus claims at once: pre-emption of lower runs holding
the systems a focus run needs, and holds on the queued ones (``preemption.apply_claims``).

Requests of the project carry them already (``adapters.priority``); the ``run_priorities``
sensor tags what reached the queue some other way (an instance without this coordinator).
Configured by ``instance.instance_settings``::

    run_coordinator:
      module: medallion_assets.adapters.run_queue
      class: PriorityRunCoordinator
      config: {project_root: /path/to/project, max_concurrent_runs: 10, ...}
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dagster import Field, QueuedRunCoordinator, StringSource

from medallion_assets.adapters.kill_switch import run_tables
from medallion_assets.adapters.preemption import apply_claims
from medallion_assets.adapters.priority import priority_tags
from medallion_assets.catalog import load_catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.profiles.priority import PROFILE_TAG

if TYPE_CHECKING:
    from dagster import DagsterRun, SubmitRunContext

    from medallion_assets.adapters.dagster_internals import ConfigurableClassData
    from medallion_assets.catalog import Catalog
    from medallion_assets.control_plane import ControlPlane

# QueuedRunCoordinator's own settings, passed on as they are.
_QUEUE_KEYS = (
    "max_concurrent_runs",
    "tag_concurrency_limits",
    "dequeue_interval_seconds",
    "dequeue_use_threads",
    "dequeue_num_workers",
    "max_user_code_failure_retries",
    "user_code_failure_retry_delay",
    "block_op_concurrency_limited_runs",
)


class PriorityRunCoordinator(QueuedRunCoordinator):
    """Queues runs highest ``dagster/priority`` first, each run tagged before it is queued."""

    def __init__(self, project_root: str, **queue: Any):
        self.project_root = Path(project_root)
        super().__init__(**queue)

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        queue = super().config_type()
        assert isinstance(queue, dict)  # Dagster's queue declares its settings as a dict
        return {**queue, "project_root": Field(StringSource)}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> PriorityRunCoordinator:
        queue = {key: config_value.get(key) for key in _QUEUE_KEYS}
        return cls(config_value["project_root"], inst_data=inst_data, **queue)

    def submit_run(self, context: SubmitRunContext) -> DagsterRun:

        run = context.dagster_run
        try:
            catalog, plane = self._project()
        except Exception as error:  # never worth refusing a launch over: the sensor tags it
            logging.getLogger(__name__).warning("run %s queued as it is: %s", run.run_id, error)
            return super().submit_run(context)
        if PROFILE_TAG not in run.tags:
            try:
                tags = self.priority_tags(run, catalog, plane)
            except Exception as error:  # a priority is never worth refusing a launch over
                logging.getLogger(__name__).warning(
                    "run %s queued without a priority: %s", run.run_id, error
                )
            else:
                if tags:
                    self._instance.add_run_tags(run.run_id, tags)
        queued = super().submit_run(context)
        try:
            apply_claims(catalog, plane, self._instance)  # focus pre-emption and holds at once
        except Exception as error:  # the sensor's next tick does it; never refuse a launch
            logging.getLogger(__name__).warning("focus claims not applied at once: %s", error)
        return queued

    def _project(self) -> tuple[Catalog, ControlPlane]:
        """The project's catalog and control plane, read once for each run queued."""

        return load_catalog(self.project_root), ControlPlane.from_env(os.environ, self.project_root)

    def priority_tags(
        self, run: DagsterRun, catalog: Catalog, plane: ControlPlane
    ) -> dict[str, str]:
        """The tags of a request of the project for the run's tables (none: not its run)."""

        tables = sorted(t for t in run_tables(run, self._instance) if t in catalog.datasets)
        if not tables:
            return {}
        return priority_tags(catalog, plane, tables, run.tags.get("pipeline"))
