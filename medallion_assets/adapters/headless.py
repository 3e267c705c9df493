"""Materialize the whole project without a webserver: the demo's main job.

Daily-partitioned tables run once per day found in their raw sources (oldest first), then
every unpartitioned table runs in one run. Runs are recorded in the Dagster instance of
``DAGSTER_HOME`` when it is set, else in the project's own ``<project>/.medallion/dagster``, so
``dagster dev`` with that DAGSTER_HOME shows them.
"""

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from medallion_assets.adapters.build import definitions_for
from medallion_assets.adapters.progress import ProgressHandler, reporting_progress, run_config
from medallion_assets.adapters.run_summary import RunSummary, results_of_run
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.runtime.control import ControlPlane
from medallion_assets.runtime.errors import ResourceError
from medallion_assets.runtime.ingest import partition_of, source_of


def raw_partitions(catalog: Catalog, defs: dg.Definitions) -> list[str]:
    """Days present in the raw data of every daily-partitioned source."""
    s3 = defs.resources["s3"]
    days: set[str] = set()
    for dataset in catalog.datasets.values():
        if dataset.layer != "bronze" or dataset.settings.partitions is None:
            continue
        name, source = source_of(catalog, dataset)
        if source.partition is None:
            continue
        try:
            objects = s3.store(dataset.system).list(source.bucket, source.prefix)
        except FileNotFoundError as error:  # no bucket: nothing was ever delivered there
            raise ResourceError(
                f"{error}: source {name} of {dataset.name} has no raw data. Write the demo's "
                "with `medallion demo-data`, or check its bucket in metadata/sources.yaml and "
                "MEDALLION_S3_ENDPOINT / MEDALLION_S3_LOCAL_ROOT"
            ) from error
        for obj in objects:
            day = partition_of(source, obj.key)
            if day is not None:
                days.add(day)
    return sorted(days)


# The settings a new instance folder gets; an existing dagster.yaml is the operator's and is
# left as it is.
INSTANCE_SETTINGS = """\
telemetry:
  enabled: false
"""


def dagster_home(project_root: Path, env: Mapping[str, str] | None = None) -> Path:
    """``$DAGSTER_HOME``, else the project's own ``<project>/.medallion/dagster``."""
    env = os.environ if env is None else env
    if env.get("DAGSTER_HOME"):
        return Path(env["DAGSTER_HOME"]).resolve()
    return Path(project_root).resolve() / ".medallion" / "dagster"


def project_instance(
    project_root: Path, env: Mapping[str, str] | None = None
) -> dg.DagsterInstance:
    """The persistent instance ``medallion run`` records into (see ``dagster_home``), created with
    ``INSTANCE_SETTINGS`` when its folder or its dagster.yaml does not exist yet."""
    home = dagster_home(project_root, env)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_SETTINGS)
    return dg.DagsterInstance.from_config(str(home))


def run_project(
    project_root: Path,
    log: Callable[[str], None] = print,
    instance: Any = None,
    progress: bool = False,
) -> RunSummary:
    """Materialize every table: each day of the daily tables, then the rest. With ``progress``,
    ``log`` also gets one line as each table's step ends."""
    if instance is None:
        with project_instance(project_root) as owned:
            return run_project(project_root, log, owned, progress)
    catalog = load_catalog(project_root)
    translator = DatasetTranslator(catalog)
    defs = definitions_for(catalog, translator)
    daily = [n for n, d in catalog.datasets.items() if d.settings.partitions is not None]
    plain = [n for n in catalog.datasets if n not in daily]
    plane = ControlPlane.from_env(os.environ, project_root)
    plane.store()  # a store that cannot be used would fail every step alike: say so once, now
    days = raw_partitions(catalog, defs) if daily else []
    summary = RunSummary()
    started = time.perf_counter()
    job = defs.resolve_implicit_global_asset_job_def()
    total = len(daily) * len(days) + len(plain)
    with reporting_progress(total, log if progress else None) as handler:
        for day in days:
            log(f"materializing {len(daily)} daily table(s) for {day} ...")
            handler.partition = day
            _execute(job, daily, day, instance, summary, plane, handler)
        if plain and not summary.having("failed"):
            log(f"materializing {len(plain)} table(s) ...")
            handler.partition = None
            _execute(job, plain, None, instance, summary, plane, handler)
    summary.seconds = time.perf_counter() - started
    return summary


def _execute(
    job: Any,
    tables: list[str],
    partition: str | None,
    instance: Any,
    summary: RunSummary,
    plane: ControlPlane,
    progress_lines: ProgressHandler,
) -> None:
    result = job.execute_in_process(
        asset_selection=[table_key(t) for t in tables],
        partition_key=partition,
        instance=instance,
        raise_on_error=False,
        run_config=run_config(progress_lines.enabled),
    )
    summary.run_ids.append(result.run_id)
    skips = {
        entry.entity.removeprefix("dataset:"): entry.message
        for entry in plane.store().audit(run_id=result.run_id)
        if entry.kind == "skip"
    }
    summary.results += results_of_run(result, tables, partition, skips)
    progress_lines.finish(tables)
