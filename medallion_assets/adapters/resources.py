"""Dagster resources over the runtime: Spark, the lake, throttled S3, the warehouse.

Each reads the settings (``MedallionSettings``: every ``MEDALLION_*`` variable, see
``medallion settings``) when a run sets it up (``setup_for_execution``), never at import, and
every method uses what it read then: a variable changed while the run goes on does not reach
it. A resource used outside a run (a tool calling it directly) reads them when called.

The settings each resource depends on are its fields too, so the UI shows them (Deployment >
Resources) and a run's launchpad can set them: ``with_environment`` gives each field set in
the environment as ``dg.EnvVar(<its variable>)`` (Dagster shows the variable's name, never
its value: URLs with passwords stay hidden); a field left unset means the variable's default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

import dagster as dg
from pydantic import Field, PrivateAttr

from medallion_assets.catalog.metadata_files import read_profiles_file
from medallion_assets.catalog.models import Throttle
from medallion_assets.control_plane import ControlPlane
from medallion_assets.io.openlineage import job_namespace
from medallion_assets.io.spark_lineage import Parent
from medallion_assets.lake import Lake
from medallion_assets.runtime.spark_jobs import run_job_tag
from medallion_assets.runtime.spark_session import (
    pool_weights,
    spark_session,
    step_session,
)
from medallion_assets.settings import MedallionSettings
from medallion_assets.throttles.rate_budgets import shared_throttle
from medallion_assets.throttles.throttle import ThrottledS3

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from medallion_assets.catalog.models import Throttle
    from medallion_assets.control.store import ControlStore
    from medallion_assets.io.object_store import ObjectStore
    from medallion_assets.io.warehouse import Warehouse
    from medallion_assets.throttles.throttle import SystemThrottle, ThrottledS3


class SettingsResource(dg.ConfigurableResource):  # type: ignore[type-arg]
    """A resource that reads the project's settings once, when a run sets it up."""

    project_root: str = Field(description="The project folder (sql/ and metadata/).")
    home: str | None = Field(
        default=None,
        description="The project's state folder ($MEDALLION_HOME), when its code location "
        "gives it one of its own",
    )

    # Field -> the setting (a MedallionSettings field) it shows and sets.
    SETTINGS: ClassVar[dict[str, str]] = {}

    _settings: MedallionSettings | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._settings = self._read()

    @property
    def settings(self) -> MedallionSettings:
        """The settings read at set-up; read now when the resource was not set up by a run."""
        if self._settings is not None:
            return self._settings
        return self._read()

    def _read(self) -> MedallionSettings:
        """The environment's settings, with this resource's fields over their variables."""
        given: dict[str, str] = {}
        for name, setting in {"home": "home", **self.SETTINGS}.items():
            value = getattr(self, name)
            if isinstance(value, dg.EnvVar):  # outside a run Dagster has not resolved it
                value = value.get_value()
            if value is not None:
                given[variable_of(setting)] = str(value)
        return MedallionSettings.from_env({**os.environ, **given}, Path(self.project_root))

    @classmethod
    def with_environment(cls, env: Mapping[str, str], **fields: Any) -> Self:
        """The resource with each of its settings that ``env`` sets as ``dg.EnvVar``."""
        shown: dict[str, Any] = {
            name: dg.EnvVar(variable_of(setting))
            for name, setting in cls.SETTINGS.items()
            if env.get(variable_of(setting))
        }
        return cls(**{**shown, **fields})


def variable_of(setting: str) -> str:
    """``warehouse_url`` -> ``MEDALLION_WAREHOUSE_URL``: the variable a setting is read from."""
    alias = MedallionSettings.model_fields[setting].alias
    assert alias is not None, setting
    return alias


def _shown(setting: str) -> Any:
    """A resource field for the setting: its meaning and default, as `medallion settings`."""
    field = MedallionSettings.model_fields[setting]
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    return Field(
        default=None,
        description=f"{field.description}; default: {extra.get('default_text', 'unset')} "
        f"(${variable_of(setting)})",
    )


class ControlResource(SettingsResource):
    """The control plane: effective flags (read at each call) and the audit log. Within a run
    its store is opened (and its schema checked) once; elsewhere (a sensor's tick, a tool) once
    per call."""

    SETTINGS = {"control_url": "control_url"}
    control_url: str | None = _shown("control_url")

    _plane: ControlPlane | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        super().setup_for_execution(context)
        self._plane = ControlPlane.of(self.settings)

    def plane(self) -> ControlPlane:
        return self._plane if self._plane is not None else ControlPlane.of(self.settings)


class SparkResource(SettingsResource):
    """The Spark session of the run: local, a master URL, or Spark Connect; ``spark_config``
    adds Spark settings to the driver it starts. The session starts when a step first asks for
    it, not when the run sets the resource up. The project's own resource, not
    dagster-pyspark's ``PySparkResource``: that one starts its session at set-up and pins one
    Dagster patch, and nothing of it was left once both were overridden."""

    SETTINGS = {s: s for s in ("spark_master", "spark_remote", "spark_driver_memory")}
    spark_config: dict[str, Any] = Field(
        default_factory=dict,
        description="More Spark settings for the driver this process starts, e.g. "
        "{spark.executor.memory: 4g}.",
    )
    spark_master: str | None = _shown("spark_master")
    spark_remote: str | None = _shown("spark_remote")
    spark_driver_memory: str | None = _shown("spark_driver_memory")

    _parent: Parent | None = PrivateAttr(default=None)
    _opened: bool = PrivateAttr(default=False)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        SettingsResource.setup_for_execution(self, context)  # no session yet: see session()
        run = context.run
        if run is not None:  # the parent of what Spark reports (io/spark_lineage.py)
            namespace = job_namespace(os.environ)
            self._parent = Parent(namespace, run.job_name, run.run_id)

    @property
    def spark_session(self) -> SparkSession:
        """The session (``PySparkResource``'s name for it)."""
        return self.session()

    def session(self) -> SparkSession:
        # Spark's Python side: loaded only where Spark runs
        from pyspark import SparkContext

        starting = SparkContext._active_spark_context is None  # the pools are set at start
        weights = self.pool_weights() if starting else None
        session = spark_session(self.settings, weights, self.spark_config, self._parent)
        self._opened = True
        return session

    def opened_session(self) -> SparkSession | None:
        """The session when this resource opened one, else None: healing a step that never
        reached Spark does not start it."""
        return self.session() if self._opened else None

    def pool_weights(self) -> dict[str, int]:
        """The steps' FAIR pools weighted as the active profile ranks criticality."""

        # profiles.yaml alone: the code location has loaded (and validated) the project
        return pool_weights(read_profiles_file(Path(self.project_root)))

    def step_session(self, pool: str, run_id: str, label: str | None = None) -> SparkSession:
        """A session of its own for one step (temp views and SQL settings apart from the other
        steps running beside it), its Spark jobs in the FAIR scheduler pool ``pool``, tagged
        with ``run_id`` (terminating the run cancels them) and described as ``label``."""

        return step_session(self.session(), self.settings, pool, run_job_tag(run_id), label)


class LakeResource(SettingsResource):
    """The Iceberg lake: its warehouse folder or bucket, and its catalog."""

    SETTINGS = {"lake_location": "lake", "lake_catalog": "lake_catalog"}
    lake_location: str | None = _shown("lake")
    lake_catalog: str | None = _shown("lake_catalog")

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
    the budgets every step and run share (``throttles.rate_budgets``)."""

    SETTINGS = {s: s for s in ("s3", "s3_endpoint", "s3_local_root", "aws_region")}
    throttles: dict[str, dict[str, float | None]]  # system -> Throttle fields
    s3: str | None = _shown("s3")
    s3_endpoint: str | None = _shown("s3_endpoint")
    s3_local_root: str | None = _shown("s3_local_root")
    aws_region: str | None = _shown("aws_region")

    def store(self, system: str, control: ControlStore | None = None) -> ThrottledS3:
        """``system``'s store, throttled out of the budgets in ``control`` (the run's store;
        else the settings' store, opened now)."""
        # boto3: loaded only when an S3 store is made
        from medallion_assets.io.s3_store import object_store_of

        declared = _limits(self.throttles, system)
        throttle = _shared_throttle(self.settings, system, declared, control)
        return ThrottledS3(object_store_of(self.settings), throttle)

    def raw_store(self) -> ObjectStore:
        """Unthrottled store, for tools that write demo data."""
        # boto3: loaded only when an S3 store is made
        from medallion_assets.io.s3_store import object_store_of

        return object_store_of(self.settings)


class WarehouseResource(SettingsResource):
    """The warehouse gold tables load into: DuckDB file, PostgreSQL or Redshift."""

    SETTINGS = {"warehouse_url": "warehouse_url"}
    throttles: dict[str, dict[str, float | None]]
    warehouse_url: str | None = _shown("warehouse_url")

    def url(self) -> str:
        return self.settings.effective_warehouse_url

    def connect(self) -> Warehouse:
        # the warehouse drivers and pyarrow: loaded only when a table loads
        from medallion_assets.io.warehouse import warehouse_from_url

        return warehouse_from_url(self.url())

    def throttle(self, system: str, control: ControlStore | None = None) -> SystemThrottle:
        """``system``'s throttle out of the budgets in ``control`` (else the settings' store)."""
        return _shared_throttle(self.settings, system, _limits(self.throttles, system), control)


def _limits(throttles: dict[str, dict[str, float | None]], system: str) -> Throttle:

    return Throttle.model_validate(throttles.get(system, {}))


def _shared_throttle(
    settings: MedallionSettings, system: str, declared: Throttle, control: ControlStore | None
) -> SystemThrottle:
    """The system's throttle over the budgets every step and run share in the control store,
    at the rates in force: an operator's throttle and a reduce_parallelism cut, re-read every
    second."""

    store = control if control is not None else ControlPlane.of(settings).store()
    return shared_throttle(store, system, declared)
