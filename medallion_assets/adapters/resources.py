"""Dagster resources over the runtime: Spark, the lake, throttled S3, the warehouse.

Each reads its environment when a run builds it (``setup_for_execution``), never at import:

| variable | default | meaning |
|---|---|---|
| ``MEDALLION_HOME`` | ``<project>/.medallion`` | local state: lake, landing, local S3 |
| ``MEDALLION_LAKE`` | ``$MEDALLION_HOME/lake`` | versioned tables |
| ``MEDALLION_KEEP_VERSIONS`` | 3 | versions kept per table |
| ``MEDALLION_S3_ENDPOINT`` | unset: a local folder stands in | S3 API endpoint (moto, AWS) |
| ``MEDALLION_S3_LOCAL_ROOT`` | ``$MEDALLION_HOME/s3`` | the local folder standing in for S3 |
| ``MEDALLION_SPARK_MASTER`` | ``local[*]`` | Spark master URL |
| ``MEDALLION_SPARK_REMOTE`` | unset | Spark Connect URL, e.g. ``sc://host:15002`` |
| ``MEDALLION_WAREHOUSE_URL`` | ``duckdb:///$MEDALLION_HOME/warehouse.duckdb`` | warehouse |
| ``MEDALLION_CONTROL_URL`` | ``sqlite:///$MEDALLION_HOME/control.db`` | control store |
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dagster as dg
from pydantic import PrivateAttr

from medallion_assets.runtime.lake import Lake, lake_location, state_home
from medallion_assets.runtime.spark_session import SparkSettings, spark_session

if TYPE_CHECKING:
    from medallion_assets.catalog.models import Throttle


def medallion_home(project_root: str) -> Path:
    return state_home(os.environ, Path(project_root))


class ControlResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The control plane: effective flags (read at each call) and the audit log."""

    project_root: str

    def plane(self) -> Any:
        from medallion_assets.control.plane import ControlPlane

        return ControlPlane.from_env(os.environ, Path(self.project_root))


class SparkResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The Spark session of the run: local, a master URL, or Spark Connect."""

    def session(self) -> Any:
        return spark_session(SparkSettings.from_env(os.environ))


class LakeResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    project_root: str

    _lake: Lake | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._lake = self.build()

    def build(self) -> Lake:
        keep = int(os.environ.get("MEDALLION_KEEP_VERSIONS", "3"))
        return Lake(lake_location(os.environ, Path(self.project_root)), keep_versions=keep)

    @property
    def lake(self) -> Lake:
        if self._lake is None:
            self._lake = self.build()
        return self._lake

    @property
    def landing_root(self) -> Path:
        return medallion_home(self.project_root) / "landing"


class S3Resource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """Object storage for raw sources, throttled per system as ``systems.yaml`` says."""

    project_root: str
    throttles: dict[str, dict[str, float | None]]  # system -> Throttle fields

    def store(self, system: str) -> Any:
        from medallion_assets.catalog.models import Throttle
        from medallion_assets.io.object_store import object_store_from_env
        from medallion_assets.io.throttle import SystemThrottle, ThrottledS3

        base = object_store_from_env(os.environ, medallion_home(self.project_root) / "s3")
        limits = Throttle.model_validate(self.throttles.get(system, {}))
        return ThrottledS3(base, SystemThrottle(system, _cut(self.project_root, system, limits)))

    def raw_store(self) -> Any:
        """Unthrottled store, for tools that write demo data."""
        from medallion_assets.io.object_store import object_store_from_env

        return object_store_from_env(os.environ, medallion_home(self.project_root) / "s3")


class WarehouseResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """The warehouse gold tables load into: DuckDB file, PostgreSQL or Redshift."""

    project_root: str
    throttles: dict[str, dict[str, float | None]]

    def url(self) -> str:
        default = f"duckdb:///{medallion_home(self.project_root) / 'warehouse.duckdb'}"
        return os.environ.get("MEDALLION_WAREHOUSE_URL") or default

    def connect(self) -> Any:
        from medallion_assets.io.warehouse import warehouse_from_url

        return warehouse_from_url(self.url())

    def throttle(self, system: str) -> Any:
        from medallion_assets.catalog.models import Throttle
        from medallion_assets.io.throttle import SystemThrottle

        limits = Throttle.model_validate(self.throttles.get(system, {}))
        return SystemThrottle(system, _cut(self.project_root, system, limits))


def _cut(project_root: str, system: str, limits: Throttle) -> Throttle:
    """The limits with any reduce_parallelism cut in force (read now, from the control store)."""
    import time

    from medallion_assets.control.plane import ControlPlane
    from medallion_assets.io.throttle import reduced_limits

    plane = ControlPlane.from_env(os.environ, Path(project_root))
    return reduced_limits(limits, plane.state().throttle_factor(system, time.time()))
