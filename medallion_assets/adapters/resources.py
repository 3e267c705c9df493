"""Dagster resources over the runtime: Spark, the lake, throttled S3, the warehouse.

Each reads the settings (``MedallionSettings``: every ``MEDALLION_*`` variable, see
``medallion settings``) when a run sets it up (``setup_for_execution``), never at import, and
every method uses what it read then: a variable changed while the run goes on does not reach
it. A resource used outside a run (a tool calling it directly) reads them when called.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import PrivateAttr

from medallion_assets.lake import Lake
from medallion_assets.settings import MedallionSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from medallion_assets.catalog.models import Throttle
    from medallion_assets.control.plane import ControlPlane
    from medallion_assets.io.object_store import ObjectStore
    from medallion_assets.io.throttle import SystemThrottle, ThrottledS3
    from medallion_assets.io.warehouse import Warehouse


class SettingsResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """A resource that reads the project's settings once, when a run sets it up."""

    project_root: str

    _settings: MedallionSettings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._settings = MedallionSettings.from_env(os.environ, Path(self.project_root))

    @property
    def settings(self) -> MedallionSettings:
        """The settings read at set-up; read now when the resource was not set up by a run."""
        if self._settings is not None:
            return self._settings
        return MedallionSettings.from_env(os.environ, Path(self.project_root))


class ControlResource(SettingsResource):
    """The control plane: effective flags (read at each call) and the audit log."""

    def plane(self) -> ControlPlane:
        from medallion_assets.control.plane import ControlPlane

        return ControlPlane.of(self.settings)


class SparkResource(SettingsResource):
    """The Spark session of the run: local, a master URL, or Spark Connect."""

    def session(self) -> SparkSession:
        from pyspark import SparkContext

        from medallion_assets.runtime.spark_session import spark_session

        starting = SparkContext._active_spark_context is None  # the pools are set at start
        return spark_session(self.settings, self.pool_weights() if starting else None)

    def pool_weights(self) -> dict[str, int]:
        """The steps' FAIR pools weighted as the active profile ranks criticality."""
        from medallion_assets.catalog import load_catalog
        from medallion_assets.runtime.spark_session import pool_weights

        return pool_weights(load_catalog(Path(self.project_root)).profiles)

    def step_session(self, pool: str, run_id: str) -> SparkSession:
        """A session of its own for one step (temp views and SQL settings apart from the other
        steps running beside it), its Spark jobs in the FAIR scheduler pool ``pool``, tagged
        with ``run_id`` (terminating the run cancels them)."""
        from medallion_assets.runtime.spark_session import run_job_tag, step_session

        return step_session(self.session(), self.settings, pool, run_job_tag(run_id))


class LakeResource(SettingsResource):
    _lake: Lake | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        super().setup_for_execution(context)
        self._lake = self.build()

    def build(self) -> Lake:
        return Lake.of(self.settings)

    @property
    def lake(self) -> Lake:
        if self._lake is None:
            self._lake = self.build()
        return self._lake


class S3Resource(SettingsResource):
    """Object storage for raw sources, throttled per system as ``systems.yaml`` says, out of
    the budgets every step and run share (``control.rate_budgets``)."""

    throttles: dict[str, dict[str, float | None]]  # system -> Throttle fields

    def store(self, system: str) -> ThrottledS3:
        from medallion_assets.io.object_store import object_store_of
        from medallion_assets.io.throttle import ThrottledS3

        throttle = _shared_throttle(self.settings, system, _limits(self.throttles, system))
        return ThrottledS3(object_store_of(self.settings), throttle)

    def raw_store(self) -> ObjectStore:
        """Unthrottled store, for tools that write demo data."""
        from medallion_assets.io.object_store import object_store_of

        return object_store_of(self.settings)


class WarehouseResource(SettingsResource):
    """The warehouse gold tables load into: DuckDB file, PostgreSQL or Redshift."""

    throttles: dict[str, dict[str, float | None]]

    def url(self) -> str:
        return self.settings.effective_warehouse_url

    def connect(self) -> Warehouse:
        from medallion_assets.io.warehouse import warehouse_from_url

        return warehouse_from_url(self.url())

    def throttle(self, system: str) -> SystemThrottle:
        return _shared_throttle(self.settings, system, _limits(self.throttles, system))


def _limits(throttles: dict[str, dict[str, float | None]], system: str) -> Throttle:
    from medallion_assets.catalog.models import Throttle

    return Throttle.model_validate(throttles.get(system, {}))


def _shared_throttle(
    settings: MedallionSettings, system: str, declared: Throttle
) -> SystemThrottle:
    """The system's throttle over the budgets every step and run share in the control store,
    at the rates in force: an operator's throttle and a reduce_parallelism cut, re-read every
    second."""
    from medallion_assets.control.plane import ControlPlane
    from medallion_assets.control.rate_budgets import shared_throttle

    return shared_throttle(ControlPlane.of(settings).store(), system, declared)
