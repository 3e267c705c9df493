"""Materialize the whole project without a webserver: the demo's main job.

Daily-partitioned tables run once per day found in their raw sources (oldest first), then
every unpartitioned table runs in one run. Runs go to the Dagster instance of ``DAGSTER_HOME``
when it is set (so ``dagster dev`` shows them), else to an ephemeral instance.
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from medallion_assets.adapters.build import definitions_for
from medallion_assets.adapters.translator import DatasetTranslator, step_name, step_table, table_key
from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.planner.healing import summary_line
from medallion_assets.runtime.control import ControlPlane
from medallion_assets.runtime.ingest import partition_of, source_of


@dataclass
class TableResult:
    table: str
    partition: str | None
    rows: int
    skipped: bool
    quarantined: int | None
    warehouse_rows: int | None
    checks_passed: int = 0
    checks_failed: int = 0


@dataclass
class RunSummary:
    results: list[TableResult] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    seconds: float = 0.0
    success: bool = True
    # table -> "check: message" of each failed blocking check that kept it from publishing
    blocked: dict[str, list[str]] = field(default_factory=dict)
    failed_steps: list[str] = field(default_factory=list)  # steps that failed for other reasons
    # table (with "[partition]" for a day's run) -> the one-line reason its step failed
    failed: dict[str, str] = field(default_factory=dict)
    # table -> why the kill switch skipped it; steps Dagster skipped because an upstream was off
    disabled: dict[str, str] = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)  # tables

    @property
    def only_blocked(self) -> bool:
        """Every failure was a blocking check doing its job (nothing else went wrong)."""
        return not self.success and bool(self.blocked) and not self.failed_steps


def raw_partitions(catalog: Catalog, defs: dg.Definitions) -> list[str]:
    """Days present in the raw data of every daily-partitioned source."""
    s3 = defs.resources["s3"]
    days: set[str] = set()
    for dataset in catalog.datasets.values():
        if dataset.layer != "bronze" or dataset.settings.partitions is None:
            continue
        _, source = source_of(catalog, dataset)
        if source.partition is None:
            continue
        for obj in s3.store(dataset.system).list(source.bucket, source.prefix):
            day = partition_of(source, obj.key)
            if day is not None:
                days.add(day)
    return sorted(days)


def dagster_home(project_root: Path) -> Path:
    """The project's own Dagster instance folder, used when DAGSTER_HOME is not set."""
    return Path(project_root).resolve() / ".medallion" / "dagster"


def project_instance(project_root: Path) -> dg.DagsterInstance:
    home = dagster_home(project_root)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text("telemetry:\n  enabled: false\n")
    return dg.DagsterInstance.from_config(str(home))


def run_project(
    project_root: Path, log: Callable[[str], None] = print, instance: Any = None
) -> RunSummary:
    catalog = load_catalog(project_root)
    translator = DatasetTranslator(catalog)
    defs = definitions_for(catalog, translator)
    # A store that cannot be used would fail every step the same way: say so once, up front.
    ControlPlane.from_env(os.environ, project_root).store()
    if instance is None:
        instance = (
            dg.DagsterInstance.get()
            if os.environ.get("DAGSTER_HOME")
            else dg.DagsterInstance.ephemeral()
        )
    daily = [n for n, d in catalog.datasets.items() if d.settings.partitions is not None]
    plain = [n for n in catalog.datasets if n not in daily]
    summary = RunSummary()
    started = time.perf_counter()
    job = defs.resolve_implicit_global_asset_job_def()
    for day in raw_partitions(catalog, defs) if daily else []:
        log(f"materializing {len(daily)} daily table(s) for {day} ...")
        _execute(job, daily, day, instance, summary, project_root)
    if plain and (summary.success or summary.only_blocked):
        log(f"materializing {len(plain)} table(s) ...")
        _execute(job, plain, None, instance, summary, project_root)
    summary.seconds = time.perf_counter() - started
    return summary


def _execute(
    job: Any,
    tables: list[str],
    partition: str | None,
    instance: Any,
    summary: RunSummary,
    root: Path,
) -> None:
    result = job.execute_in_process(
        asset_selection=[table_key(t) for t in tables],
        partition_key=partition,
        instance=instance,
        raise_on_error=False,
        # Step-by-step debug events go to the instance; the console shows warnings and errors.
        run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
    )
    summary.run_ids.append(result.run_id)
    summary.success = summary.success and result.success
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        meta = {k: v.value for k, v in materialization.metadata.items()}
        summary.results.append(
            TableResult(
                ".".join(materialization.asset_key.path),
                partition,
                int(meta.get("rows", 0)),
                bool(meta.get("skipped", False)),
                meta.get("quarantined_rows"),
                meta.get("warehouse_rows"),
            )
        )
    materialized = {
        ".".join(e.step_materialization_data.materialization.asset_key.path)
        for e in result.get_asset_materialization_events()
    }
    blocked_steps = set()
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE" and event.step_key:
            summary.failed_steps.append(event.step_key)
            where = step_table(event.step_key) + (f"[{partition}]" if partition else "")
            summary.failed[where] = failure_reason(event.event_specific_data)
        if event.event_type_value == "ASSET_CHECK_EVALUATION":
            evaluation = event.event_specific_data
            table = ".".join(evaluation.asset_key.path)
            blocking = evaluation.severity == dg.AssetCheckSeverity.ERROR
            if not evaluation.passed and blocking and table not in materialized:
                message = evaluation.metadata.get("message")
                text = f"{evaluation.check_name}: {message.value if message else 'failed'}"
                summary.blocked.setdefault(table, []).append(text)
                blocked_steps.add(step_name(table))
            for row in summary.results:
                if row.table == table:
                    if evaluation.passed:
                        row.checks_passed += 1
                    else:
                        row.checks_failed += 1
                    break
    summary.failed_steps = [s for s in summary.failed_steps if s not in blocked_steps]
    for step in blocked_steps:  # a blocked table is reported as blocked, not as failed
        summary.failed.pop(step_table(step) + (f"[{partition}]" if partition else ""), None)
    summary.not_run += [
        step_table(e.step_key)
        for e in result.all_events
        if e.event_type_value == "STEP_SKIPPED" and e.step_key
    ]
    skips = ControlPlane.from_env(os.environ, root).store().audit(run_id=result.run_id)
    for entry in skips:
        if entry.kind == "skip":
            summary.disabled[entry.entity.removeprefix("dataset:")] = entry.message


def failure_reason(data: Any) -> str:
    """One line saying why a step failed: the ``dg.Failure``'s description (the healing step
    writes one line naming the object or path), else the root of the error's text."""
    user = getattr(data, "user_failure_data", None)
    if user is not None and user.description:
        return summary_line(user.description)
    error = getattr(data, "error", None)
    if error is None:
        return "failed"
    # A user-code error arrives wrapped in Dagster's "Error occurred while executing ...".
    if error.cls_name == "DagsterExecutionStepExecutionError" and error.cause is not None:
        error = error.cause
    return summary_line(error.message) or error.cls_name
