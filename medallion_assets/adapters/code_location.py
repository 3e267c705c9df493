"""One function builds the whole ``Definitions`` from a loaded catalog."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
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
from medallion_assets.adapters.step_order import SHARED_EXECUTOR, executor_for
from medallion_assets.adapters.translator import (
    DEFAULT_NAMES,
    DatasetTranslator,
    Names,
    StepOptions,
    Translation,
)
from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.runtime.table_runner import TableRunner
from medallion_assets.settings import MedallionSettings, project_environment


def build_definitions(
    project_root: Path,
    translator_class: type[DatasetTranslator] = DatasetTranslator,
    runner: TableRunner | None = None,
    names: Names = DEFAULT_NAMES,
    home: Path | None = None,
    selected: Callable[[Catalog], frozenset[str] | None] = lambda _catalog: None,
    translation: Translation | None = None,
    step: StepOptions | None = None,
) -> dg.Definitions:
    """The code location's ``Definitions``, with its asset graph and jobs already resolved.
    Every table's step executes through ``runner`` (a ``TableRunner`` by default; pass an
    instance of a subclass to wrap or replace the execution of a table). ``names``: the
    project's names in Dagster (a prefix when its code location holds several projects);
    ``home``: the project's own state folder, over ``$MEDALLION_HOME``; ``selected``: the
    tables it executes, of the loaded catalog (None: all; the others stay in the graph, not
    executable); ``translation``: asset attributes over the translator's; ``step``: each
    table's op settings (the component's ``op:``).

    A code server resolves both before it answers anything, so doing it here costs nothing
    extra, and it lets the whole load run with the cyclic garbage collector paused.
    """
    with collector_paused():
        catalog = load_catalog(project_root)
        # The kinds of warehouse-loaded tables say where loads go now (DuckDB on the defaults).
        env = project_environment(home)
        warehouse = MedallionSettings.from_env(env, project_root).warehouse_kind
        translator = translator_class(
            catalog, warehouse_kind=warehouse, names=names, translation=translation
        )
        defs = definitions_for(
            catalog,
            translator,
            runner=runner,
            home=home,
            selected=selected(catalog),
            step=step or StepOptions(),
        )
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
    catalog: Catalog,
    translator: DatasetTranslator,
    runner: TableRunner | None = None,
    home: Path | None = None,
    selected: frozenset[str] | None = None,
    step: StepOptions | None = None,
) -> dg.Definitions:
    """The project's definitions; ``selected``: the tables it executes (None: all)."""
    names = translator.names
    executes = selected if selected is not None else frozenset(catalog.datasets)
    external = [translator.get_source_spec(n, s) for n, s in catalog.sources.items()]
    external += [translator.get_exposure_spec(e) for e in catalog.exposures.values()]
    # Steps on threads over the run's one Spark (adapters/threads.py), up to
    # MEDALLION_MAX_WORKERS (default: the cores) at a time, in the profile's order. Alone in
    # its code location the project's executor is the location's; beside other projects each
    # job carries its project's, and the location's default is one they share.
    executor = executor_for(catalog, names, {"MEDALLION_HOME": str(home)} if home else {})
    own = executor if names.prefix else None
    jobs = build_jobs(catalog, names, own, executes)
    root = str(catalog.root.resolve())
    throttles = {name: system.throttle.model_dump() for name, system in catalog.systems.items()}
    env = project_environment(home)
    fields = {"home": str(home)} if home else {}
    return dg.Definitions(
        assets=[*build_assets(catalog, translator, runner, executes, step), *external],
        jobs=[*jobs, build_control_job(catalog, names, own)],
        schedules=build_schedules(catalog, jobs, translator, executes),
        sensors=[
            *build_sensors(catalog, names, executes),
            build_control_sensor(catalog, names),
            *build_run_audit_sensors(names),
            build_relaunch_sensor(catalog, jobs, names),
            build_pools_sensor(catalog, names),
            build_priority_sensor(catalog, jobs, names),
        ],
        # Each shows the settings it uses, as EnvVars where the environment sets them.
        resources={
            names.resource("spark"): SparkResource.with_environment(
                env, project_root=root, **fields
            ),
            names.resource("control"): ControlResource.with_environment(
                env, project_root=root, **fields
            ),
            names.resource("lake"): LakeResource.with_environment(env, project_root=root, **fields),
            names.resource("s3"): S3Resource.with_environment(
                env, project_root=root, throttles=throttles, **fields
            ),
            names.resource("warehouse"): WarehouseResource.with_environment(
                env, project_root=root, throttles=throttles, **fields
            ),
        },
        executor=SHARED_EXECUTOR if names.prefix else executor,
        # The console logger stays the default; `medallion run` also names the progress one.
        loggers={"console": dg.colored_console_logger, LOGGER_KEY: progress_logger},
    )
