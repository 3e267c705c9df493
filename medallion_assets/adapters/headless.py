"""Materialize the whole project without a webserver: the demo's main job.

Daily-partitioned tables run once per day found in their raw sources (oldest first), then
every unpartitioned table runs in one run. Runs go to the Dagster instance of ``DAGSTER_HOME``
when it is set (so ``dagster dev`` shows them), else to an ephemeral instance.
"""

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dagster as dg

from medallion_assets.adapters.build import definitions_for
from medallion_assets.adapters.lost_runs import mark_lost_runs_failed, process_tags
from medallion_assets.adapters.translator import DatasetTranslator, step_name, step_table, table_key
from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.runtime.control import ControlPlane
from medallion_assets.runtime.ingest import partition_of, source_of
from medallion_assets.runtime.lake import lake_location
from medallion_assets.runtime.locks import Holder, build_locks

# How long `medallion run` waits for another one on the same project: a whole-project run may
# take a while; past an hour the other one is more likely hung than busy, and a person should
# look at it (`medallion run --wait` changes it).
RUN_WAIT_SECONDS = 3600.0


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
    # table -> why the kill switch skipped it; steps Dagster skipped because an upstream was off
    disabled: dict[str, str] = field(default_factory=dict)
    not_run: list[str] = field(default_factory=list)  # tables
    # table -> what its step waited for, or why it gave up waiting (another run building it)
    waited: dict[str, list[str]] = field(default_factory=dict)

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


# The project instance's settings. Run monitoring (it runs in the daemon, i.e. under
# `dagster dev`): a run whose worker never came up or whose cancel hangs is marked failed
# instead of staying STARTING/CANCELING forever; a lost run is never resumed in place
# (max_resume_run_attempts: 0), because the relaunch sensor heals it first and re-launches
# only its unfinished tables. `medallion run` has no daemon: it marks its own lost runs
# failed when it starts (adapters/lost_runs.py).
INSTANCE_SETTINGS = """\
telemetry:
  enabled: false
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  cancel_timeout_seconds: 180
  max_resume_run_attempts: 0
  poll_interval_seconds: 30
"""


def project_instance(project_root: Path) -> dg.DagsterInstance:
    home = dagster_home(project_root)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(INSTANCE_SETTINGS)
    return dg.DagsterInstance.from_config(str(home))


def run_project(
    project_root: Path,
    log: Callable[[str], None] = print,
    instance: Any = None,
    wait_seconds: float = RUN_WAIT_SECONDS,
) -> RunSummary:
    catalog = load_catalog(project_root)
    translator = DatasetTranslator(catalog)
    defs = definitions_for(catalog, translator)
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
    with one_run_at_a_time(project_root, catalog.project.name, log, wait_seconds):
        mark_lost_runs_failed(instance, log)
        for day in raw_partitions(catalog, defs) if daily else []:
            log(f"materializing {len(daily)} daily table(s) for {day} ...")
            _execute(job, daily, day, instance, summary, project_root)
        if plain and (summary.success or summary.only_blocked):
            log(f"materializing {len(plain)} table(s) ...")
            _execute(job, plain, None, instance, summary, project_root)
    summary.seconds = time.perf_counter() - started
    return summary


class RunInProgress(RuntimeError):
    """Another ``medallion run`` kept this project busy for longer than this one would wait."""


@contextmanager
def one_run_at_a_time(
    project_root: Path, project: str, log: Callable[[str], None], wait_seconds: float
) -> Iterator[None]:
    """Hold the project's run lock for a whole ``medallion run``.

    Why a project-level lock on top of the per-table build locks: two whole-project runs at
    once would contend table by table (each waiting for the other's build, then skipping it)
    while each holds a Spark JVM; queueing the second behind the first ends the same way (it
    finds everything built and skips it, or builds what arrived meanwhile), with one Spark at
    a time and a log that says plainly what it waits for. The table locks still keep runs
    from ``dagster dev``, schedules and backfills off a table this run is building.
    """
    root = Path(project_root)
    plane = ControlPlane.from_env(os.environ, root)
    locks = build_locks(plane.url, lake_location(os.environ, root))

    def on_wait(other: Holder | None) -> None:
        who = f" ({other.describe()})" if other is not None else ""
        message = (
            f"another medallion run{who} is running on this project; waiting up to "
            f"{wait_seconds:.0f} s for it to finish..."
        )
        log(message)
        plane.store().record("wait", "run", message, run_id="")

    with locks.hold(f"run:{project}", Holder.now(""), wait_seconds, on_wait) as held:
        if not held:
            raise RunInProgress(
                f"another medallion run is still running on this project after "
                f"{wait_seconds:.0f} s; try again later (or raise --wait)"
            )
        yield


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
        tags=process_tags(),  # so the next medallion run can tell if this process was killed
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
    summary.not_run += [
        step_table(e.step_key)
        for e in result.all_events
        if e.event_type_value == "STEP_SKIPPED" and e.step_key
    ]
    skips = ControlPlane.from_env(os.environ, root).store().audit(run_id=result.run_id)
    for entry in skips:
        table = entry.entity.removeprefix("dataset:")
        if entry.kind == "skip":
            summary.disabled[table] = entry.message
        elif entry.kind in ("wait", "busy"):  # build locks: another run was building it
            summary.waited.setdefault(table, []).append(entry.message)
