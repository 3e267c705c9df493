"""An asset job per pipeline, and one schedule per pipeline from its cron. A layer is an asset
group (``DatasetTranslator``): "Materialize all" on the group builds the layer.

A job holds all of its tables, daily-partitioned or not: the project's daily tables share one
partitions definition (``DatasetTranslator.partitions_def``), so Dagster runs a day of the
daily ones and the whole of the others in one job.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import dagster as dg

from medallion_assets.adapters.kill_switch import pipeline_schedule
from medallion_assets.adapters.relaunch import RELAUNCH_JOB
from medallion_assets.adapters.translator import DEFAULT_NAMES, DatasetTranslator, Names
from medallion_assets.catalog import Catalog


def _split(catalog: Catalog, tables: Iterable[str]) -> tuple[list[str], list[str]]:
    plain: list[str] = []
    daily: list[str] = []
    for table in tables:
        partitioned = catalog.datasets[table].settings.partitions is not None
        (daily if partitioned else plain).append(table)
    return plain, daily


def build_jobs(
    catalog: Catalog,
    names: Names = DEFAULT_NAMES,
    executor: dg.ExecutorDefinition | None = None,
    executes: Collection[str] | None = None,
) -> list[dg.UnresolvedAssetJobDefinition]:
    """The project's jobs, named by ``names``; ``executor``: theirs, when the code location's
    default is not (several projects share one location); ``executes``: the tables the code
    location executes (a component's ``select``/``exclude``; None: all), the only ones a job
    holds."""

    def _job(
        name: str, tables: Iterable[str], description: str, tags: dict[str, str]
    ) -> list[dg.UnresolvedAssetJobDefinition]:
        keys = [names.key(t) for t in tables if executes is None or t in executes]
        if not keys:
            return []
        return [
            dg.define_asset_job(
                names.name(name),
                selection=keys,
                description=description,
                tags=tags,
                executor_def=executor,
            )
        ]

    jobs = []
    for pipeline_id, pipeline in catalog.pipelines.items():
        jobs += _job(
            pipeline_id,
            catalog.pipeline_datasets(pipeline_id),
            pipeline.description or f"pipeline {pipeline_id}",
            {"pipeline": pipeline_id},
        )
    # The run-failure sensor re-launches a run of any other job (e.g. one launched from the
    # asset graph) through this one: a sensor can only request jobs it declares.
    jobs += _job(
        RELAUNCH_JOB,
        catalog.datasets,
        "re-launches the unfinished tables of a run that failed outside its steps",
        {},
    )
    return jobs


def build_schedules(
    catalog: Catalog,
    jobs: list[dg.UnresolvedAssetJobDefinition],
    translator: DatasetTranslator,
    executes: Collection[str] | None = None,
) -> list[dg.ScheduleDefinition]:
    """One schedule per pipeline, on the pipeline's cron, stopped unless the pipeline says
    ``schedule_running: true``. Each tick requests the pipeline's whole tables and the last
    complete day of its daily ones (once per day: the day is the request's run key), and
    reads the kill switch: switched-off tables are left out of the request, and a tick with
    nothing left to run is skipped with the reason."""
    names = translator.names
    by_name = {job.name: job for job in jobs}
    schedules: list[dg.ScheduleDefinition] = []
    for pipeline_id, pipeline in catalog.pipelines.items():
        if pipeline.schedule is None or names.name(pipeline_id) not in by_name:
            continue
        # Stopped unless the pipeline asks to run from the start: opening the UI on a project
        # launches nothing by itself (the control plane's sensors run; they launch no work).
        running = pipeline.enabled and pipeline.schedule_running
        status = dg.DefaultScheduleStatus.RUNNING if running else dg.DefaultScheduleStatus.STOPPED
        tables = catalog.pipeline_datasets(pipeline_id)
        plain, daily = _split(catalog, [t for t in tables if executes is None or t in executes])
        partitions = translator.partitions_def(catalog.datasets[daily[0]]) if daily else None
        schedules.append(
            pipeline_schedule(
                catalog,
                pipeline_id,
                by_name[names.name(pipeline_id)],
                pipeline.schedule,
                (plain, daily),
                status,
                partitions,
                names,
            )
        )
    return schedules
