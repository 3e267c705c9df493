"""Asset jobs per pipeline and per layer, and schedules from each pipeline's cron.

Dagster runs one partitions definition per job, so a pipeline mixing daily-partitioned and
unpartitioned tables gets two jobs: ``<id>`` and ``<id>__daily``.
"""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from medallion_assets.adapters.kill_switch import pipeline_schedule
from medallion_assets.adapters.relaunch import RELAUNCH_JOB
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import Catalog

DAILY_SUFFIX = "__daily"


def _split(catalog: Catalog, tables: Iterable[str]) -> tuple[list[str], list[str]]:
    plain: list[str] = []
    daily: list[str] = []
    for table in tables:
        partitioned = catalog.datasets[table].settings.partitions is not None
        (daily if partitioned else plain).append(table)
    return plain, daily


def _jobs_for(
    name: str,
    catalog: Catalog,
    tables: Iterable[str],
    description: str,
    tags: dict[str, str],
) -> list[dg.UnresolvedAssetJobDefinition]:
    plain, daily = _split(catalog, tables)
    jobs = []
    if plain:
        jobs.append(
            dg.define_asset_job(
                name, selection=[table_key(t) for t in plain], description=description, tags=tags
            )
        )
    if daily:
        jobs.append(
            dg.define_asset_job(
                name + DAILY_SUFFIX,
                selection=[table_key(t) for t in daily],
                description=f"{description} (daily partitions)",
                tags=tags,
            )
        )
    return jobs


def build_jobs(catalog: Catalog) -> list[dg.UnresolvedAssetJobDefinition]:
    jobs = []
    for pipeline_id, pipeline in catalog.pipelines.items():
        jobs += _jobs_for(
            pipeline_id,
            catalog,
            catalog.pipeline_datasets(pipeline_id),
            pipeline.description or f"pipeline {pipeline_id}",
            {"pipeline": pipeline_id},
        )
    for layer in ("bronze", "silver", "gold"):
        tables = [n for n, d in catalog.datasets.items() if d.layer == layer]
        jobs += _jobs_for(
            f"layer_{layer}", catalog, tables, f"every {layer} table", {"layer": layer}
        )
    # The run-failure sensor re-launches a run of any other job (e.g. one launched from the
    # asset graph) through these: a sensor can only request jobs it declares.
    jobs += _jobs_for(
        RELAUNCH_JOB,
        catalog,
        catalog.datasets,
        "re-launches the unfinished tables of a run that failed outside its steps",
        {},
    )
    return jobs


def build_schedules(
    catalog: Catalog, jobs: list[dg.UnresolvedAssetJobDefinition], translator: DatasetTranslator
) -> list[dg.ScheduleDefinition]:
    """One schedule per pipeline job, on the pipeline's cron (a daily job at its time of day,
    for the day that just ended), stopped unless the pipeline says ``schedule_running: true``.
    Each tick reads the kill switch: switched-off tables are left out of the request, and a
    tick with nothing left to run is skipped with the reason."""
    by_name = {job.name: job for job in jobs}
    schedules: list[dg.ScheduleDefinition] = []
    for pipeline_id, pipeline in catalog.pipelines.items():
        if pipeline.schedule is None:
            continue
        # Stopped unless the pipeline asks to run from the start: opening the UI on a project
        # launches nothing by itself (the control plane's sensors run; they launch no work).
        running = pipeline.enabled and pipeline.schedule_running
        status = dg.DefaultScheduleStatus.RUNNING if running else dg.DefaultScheduleStatus.STOPPED
        plain, daily = _split(catalog, catalog.pipeline_datasets(pipeline_id))
        if pipeline_id in by_name:
            schedules.append(
                pipeline_schedule(
                    catalog, pipeline_id, by_name[pipeline_id], pipeline.schedule, plain, status
                )
            )
        if pipeline_id + DAILY_SUFFIX in by_name:
            minute, hour = (f if f.isdigit() else "0" for f in pipeline.schedule.split()[:2])
            schedules.append(
                pipeline_schedule(
                    catalog,
                    pipeline_id,
                    by_name[pipeline_id + DAILY_SUFFIX],
                    f"{minute} {hour} * * *",
                    daily,
                    status,
                    # the daily tables of one job share one partitions definition
                    translator.partitions_def(catalog.datasets[daily[0]]),
                )
            )
    return schedules
