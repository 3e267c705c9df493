"""One function builds the whole ``Definitions`` from a loaded catalog."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from medallion_assets.adapters.factory import build_assets
from medallion_assets.adapters.jobs import build_jobs, build_schedules
from medallion_assets.adapters.resources import (
    LakeResource,
    S3Resource,
    SparkResource,
    WarehouseResource,
)
from medallion_assets.adapters.sensors import build_sensors
from medallion_assets.adapters.translator import DatasetTranslator
from medallion_assets.catalog import Catalog, load_catalog


def build_definitions(
    project_root: Path, translator_class: type[DatasetTranslator] = DatasetTranslator
) -> dg.Definitions:
    catalog = load_catalog(project_root)
    return definitions_for(catalog, translator_class(catalog))


def definitions_for(catalog: Catalog, translator: DatasetTranslator) -> dg.Definitions:
    external = [translator.get_source_spec(n, s) for n, s in catalog.sources.items()]
    external += [translator.get_exposure_spec(e) for e in catalog.exposures.values()]
    jobs = build_jobs(catalog)
    root = str(catalog.root.resolve())
    throttles = {name: system.throttle.model_dump() for name, system in catalog.systems.items()}
    return dg.Definitions(
        assets=[*build_assets(catalog, translator), *external],
        jobs=jobs,
        schedules=build_schedules(catalog, jobs),
        sensors=build_sensors(catalog),
        resources={
            "spark": SparkResource(),
            "lake": LakeResource(project_root=root),
            "s3": S3Resource(project_root=root, throttles=throttles),
            "warehouse": WarehouseResource(project_root=root, throttles=throttles),
        },
        # One Spark session serves every step of a run; steps parallelise inside Spark.
        executor=dg.in_process_executor,
    )
