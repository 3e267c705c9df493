"""One function builds the whole ``Definitions`` from a loaded catalog."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from medallion_assets.adapters.assets import build_assets
from medallion_assets.adapters.jobs import build_jobs, build_schedules
from medallion_assets.adapters.kill_switch import (
    build_control_job,
    build_control_sensor,
    build_run_audit_sensors,
)
from medallion_assets.adapters.pools import build_pools_sensor
from medallion_assets.adapters.preemption import build_priority_sensor
from medallion_assets.adapters.progress import LOGGER_KEY, progress_logger
from medallion_assets.adapters.relaunch import build_relaunch_sensor
from medallion_assets.adapters.resources import (
    ControlResource,
    LakeResource,
    S3Resource,
    SparkResource,
    WarehouseResource,
)
from medallion_assets.adapters.sensors import build_sensors
from medallion_assets.adapters.step_order import executor_for
from medallion_assets.adapters.translator import DatasetTranslator
from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.runtime.table_runner import TableRunner
from medallion_assets.settings import MedallionSettings


def build_definitions(
    project_root: Path,
    translator_class: type[DatasetTranslator] = DatasetTranslator,
    runner: TableRunner | None = None,
) -> dg.Definitions:
    """The code location's ``Definitions``, with its asset graph and jobs already resolved.
    Every table's step executes through ``runner`` (a ``TableRunner`` by default; pass an
    instance of a subclass to wrap or replace the execution of a table).

    A code server resolves both before it answers anything, so doing it here costs nothing
    extra, and it lets the whole load run with the cyclic garbage collector paused.
    """
    with collector_paused():
        catalog = load_catalog(project_root)
        # The kinds of warehouse-loaded tables say where loads go now (DuckDB on the defaults).
        warehouse = MedallionSettings.from_env(os.environ, project_root).warehouse_kind
        translator = translator_class(catalog, warehouse_kind=warehouse)
        defs = definitions_for(catalog, translator, runner=runner)
        defs.resolve_asset_graph()
        defs.resolve_all_job_defs()  # cached on defs: the code server's own call reuses it
    return defs


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large code location loads.

    Building the definitions of a few thousand tables allocates millions of long-lived
    objects (catalog models, specs, ops, job graphs); each allocation burst triggers a
    collection that walks all of them again, which alone was ~1.4 s of a 4.2 s load of a
    2,000-table project (bench E). Nothing built here is garbage, so nothing is lost by
    waiting; the collector runs again as soon as the load is done.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def definitions_for(
    catalog: Catalog, translator: DatasetTranslator, runner: TableRunner | None = None
) -> dg.Definitions:
    external = [translator.get_source_spec(n, s) for n, s in catalog.sources.items()]
    external += [translator.get_exposure_spec(e) for e in catalog.exposures.values()]
    jobs = build_jobs(catalog)
    root = str(catalog.root.resolve())
    throttles = {name: system.throttle.model_dump() for name, system in catalog.systems.items()}
    env = os.environ
    return dg.Definitions(
        assets=[*build_assets(catalog, translator, runner), *external],
        jobs=[*jobs, build_control_job(catalog)],
        schedules=build_schedules(catalog, jobs, translator),
        sensors=[
            *build_sensors(catalog),
            build_control_sensor(catalog),
            *build_run_audit_sensors(),
            build_relaunch_sensor(catalog, jobs),
            build_pools_sensor(catalog),
            build_priority_sensor(catalog, jobs),
        ],
        # Each shows the settings it uses, as EnvVars where the environment sets them.
        resources={
            "spark": SparkResource.with_environment(env, project_root=root),
            "control": ControlResource.with_environment(env, project_root=root),
            "lake": LakeResource.with_environment(env, project_root=root),
            "s3": S3Resource.with_environment(env, project_root=root, throttles=throttles),
            "warehouse": WarehouseResource.with_environment(
                env, project_root=root, throttles=throttles
            ),
        },
        # Steps on threads over the run's one Spark (adapters/threads.py), up to
        # MEDALLION_MAX_WORKERS (default: the cores) at a time, in the profile's order.
        executor=executor_for(catalog),
        # The console logger stays the default; `medallion run` also names the progress one.
        loggers={"console": dg.colored_console_logger, LOGGER_KEY: progress_logger},
    )
