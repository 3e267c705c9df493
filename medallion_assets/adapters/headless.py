"""Materialize the whole project without a webserver: the demo's main job.

Daily-partitioned tables run once per day found in their raw sources (oldest first), then
every unpartitioned table runs in one run. Runs are recorded in the Dagster instance of
``DAGSTER_HOME`` when it is set, else in the project's own ``<project>/.medallion/dagster``, so
``dagster dev`` with that DAGSTER_HOME shows them.
"""

import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import yaml

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.lost_runs import mark_lost_runs_failed, process_tags
from medallion_assets.adapters.pools import apply_pool_limits, system_limits
from medallion_assets.adapters.priority import priority_of
from medallion_assets.adapters.progress import ProgressHandler, reporting_progress, run_config
from medallion_assets.adapters.resources import S3Resource
from medallion_assets.adapters.run_summary import RunSummary, results_of_run
from medallion_assets.adapters.step_order import StepOrder
from medallion_assets.adapters.threads import ThreadedExecutor, execute_on_threads
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.catalog.operations import ProfilesFile
from medallion_assets.control.plane import ControlPlane
from medallion_assets.planner.profiles import ALL
from medallion_assets.planner.run_priority import PROFILE_TAG
from medallion_assets.runtime.bronze_ingest import partition_of, source_of
from medallion_assets.runtime.errors import ResourceError
from medallion_assets.runtime.locks import Holder, build_locks
from medallion_assets.settings import MedallionSettings

# How long `medallion run` waits for another one on the same project: a whole-project run may
# take a while; past an hour the other one is more likely hung than busy, and a person should
# look at it (`medallion run --wait` changes it).
RUN_WAIT_SECONDS = 3600.0


def raw_partitions(catalog: Catalog, defs: dg.Definitions) -> list[str]:
    """Days present in the raw data of every daily-partitioned source."""
    s3 = (defs.resources or {}).get("s3")
    if not isinstance(s3, S3Resource):
        raise TypeError("the project's definitions have no s3 resource")
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
# left as it is. Run monitoring (it runs in the daemon, i.e. under `dagster dev`): a run whose
# worker never came up or whose cancel hangs is marked failed instead of staying STARTING or
# CANCELING forever; a lost run is never resumed in place (max_resume_run_attempts: 0), because
# the relaunch sensor heals it first and re-launches only its unfinished tables. `medallion run`
# has no daemon: it marks its own lost runs failed when it starts (adapters/lost_runs.py).
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
# The first line of a dagster.yaml this project wrote: such a file follows profiles.yaml (it is
# rewritten when the profiles' limits change); any other is the operator's.
WRITTEN_BY = (
    "# written by medallion from metadata/profiles.yaml (rewritten when its limits change); "
    "delete this line to keep your edits\n"
)


def instance_settings(profiles: ProfilesFile | None, project_root: Path | None = None) -> str:
    """The project instance's dagster.yaml: ``INSTANCE_SETTINGS`` and Dagster's queued run
    coordinator, which starts queued runs highest ``dagster/priority`` first (the tag every
    request of the project carries), at most the largest ``max_concurrent_runs`` of the
    profiles at once, and at most each profile's own ``max_concurrent_runs`` of the runs tagged
    with it. With ``project_root``, the coordinator also tags the runs launched without a
    priority (``adapters.run_queue``)."""
    config: dict[str, object] = {}
    if project_root is not None:
        config["project_root"] = str(Path(project_root).resolve())
    if profiles is not None:
        limits = {n: p.settings.max_concurrent_runs for n, p in sorted(profiles.profiles.items())}
        config["max_concurrent_runs"] = max(limits.values())
        config["tag_concurrency_limits"] = [
            {"key": PROFILE_TAG, "value": name, "limit": limit} for name, limit in limits.items()
        ]
    if project_root is not None:
        coordinator: dict[str, object] = {
            "module": "medallion_assets.adapters.run_queue",
            "class": "PriorityRunCoordinator",
        }
    else:
        coordinator = {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"}
    if config:
        coordinator["config"] = config
    coordinated = yaml.safe_dump({"run_coordinator": coordinator}, sort_keys=False)
    return WRITTEN_BY + INSTANCE_SETTINGS + coordinated


def dagster_home(project_root: Path, env: Mapping[str, str] | None = None) -> Path:
    """``$DAGSTER_HOME``, else the project's own ``<project>/.medallion/dagster``."""
    env = os.environ if env is None else env
    if env.get("DAGSTER_HOME"):
        return Path(env["DAGSTER_HOME"]).resolve()
    return Path(project_root).resolve() / ".medallion" / "dagster"


def project_instance(
    project_root: Path,
    env: Mapping[str, str] | None = None,
    profiles: ProfilesFile | None = None,
) -> dg.DagsterInstance:
    """The persistent instance ``medallion run`` records into (see ``dagster_home``), its
    dagster.yaml written with ``instance_settings(profiles, project_root)`` when it does not
    exist yet, or brought up to date when this project wrote it."""
    home = dagster_home(project_root, env)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    wanted = instance_settings(profiles, project_root)
    if not config.exists() or (
        config.read_text().startswith(WRITTEN_BY) and config.read_text() != wanted
    ):
        config.write_text(wanted)
    return dg.DagsterInstance.from_config(str(home))


def run_project(
    project_root: Path,
    log: Callable[[str], None] = print,
    instance: dg.DagsterInstance | None = None,
    progress: bool = False,
    wait_seconds: float = RUN_WAIT_SECONDS,
    settings: MedallionSettings | None = None,
) -> RunSummary:
    """Materialize every table: each day of the daily tables, then the rest. With ``progress``,
    ``log`` also gets one line as each table's step ends. Another ``medallion run`` on the
    project is waited for, up to ``wait_seconds`` (then ``RunInProgress``). ``settings`` are
    the caller's (else read from the environment now); each run's steps use the settings its
    resources read when the run sets them up."""
    if settings is None:
        settings = MedallionSettings.from_env(os.environ, project_root)
    catalog = load_catalog(project_root)
    # The run lock comes first: two runs creating the project's new instance at once race on
    # its SQLite schema, and a run that waited must plan from what the other one left.
    with one_run_at_a_time(settings, catalog.project.name, log, wait_seconds):
        if instance is None:
            with project_instance(project_root, profiles=catalog.profiles) as owned:
                return _run(settings, catalog, log, owned, progress)
        return _run(settings, catalog, log, instance, progress)


def _run(
    settings: MedallionSettings,
    catalog: Catalog,
    log: Callable[[str], None],
    instance: dg.DagsterInstance,
    progress: bool,
) -> RunSummary:
    mark_lost_runs_failed(instance, log)
    apply_pool_limits(instance, system_limits(catalog), log)
    translator = DatasetTranslator(catalog)
    defs = definitions_for(catalog, translator)
    daily = [n for n, d in catalog.datasets.items() if d.settings.partitions is not None]
    plain = [n for n in catalog.datasets if n not in daily]
    plane = ControlPlane.of(settings)
    plane.store()  # a store that cannot be used would fail every step alike: say so once, now
    days = raw_partitions(catalog, defs) if daily else []
    started = time.perf_counter()
    total = len(daily) * len(days) + len(plain)
    # One decision for the whole medallion run: the profile in force for the project (the
    # override for all, else active) gives every run its tags, its step order and skip_below.
    priority = priority_of(catalog, plane, list(catalog.datasets), ALL)
    order = StepOrder.of(catalog, plane.store(), None, priority.tags())
    profile = f"profile {priority.source}; " if order else ""
    log(f"{profile}steps run {settings.workers} at a time (--max-workers)")
    with reporting_progress(total, log if progress else None) as handler:
        steps = _Steps(
            defs.resolve_implicit_global_asset_job_def(),
            instance,
            plane,
            ThreadedExecutor(settings.workers, order),
            handler,
            priority.tags(),
        )
        for day in days:
            log(f"materializing {len(daily)} daily table(s) for {day} ...")
            handler.partition = day
            steps.execute(daily, day)
        if plain and not steps.summary.having("failed"):
            log(f"materializing {len(plain)} table(s) ...")
            handler.partition = None
            steps.execute(plain, None)
    steps.summary.seconds = time.perf_counter() - started
    return steps.summary


@dataclass
class _Steps:
    """The runs of one ``medallion run``: each executes a set of tables (of one day) on the
    threaded executor, and adds what became of them to ``summary``."""

    job: dg.JobDefinition
    instance: dg.DagsterInstance
    plane: ControlPlane
    executor: ThreadedExecutor
    progress_lines: ProgressHandler
    tags: Mapping[str, str]  # every run's dagster/priority and medallion/profile
    summary: RunSummary = field(default_factory=RunSummary)

    def execute(self, tables: list[str], partition: str | None) -> None:
        result = execute_on_threads(
            self.job,
            [table_key(t) for t in tables],
            partition,
            self.instance,
            self.executor,
            # process tags: so the next medallion run can tell if this process was killed
            tags={**self.tags, **process_tags()},
            run_config=run_config(self.progress_lines.enabled),
        )
        summary = self.summary
        summary.run_ids.append(result.run_id)
        audit = self.plane.store().audit(run_id=result.run_id)
        skips = {e.entity.removeprefix("dataset:"): e.message for e in audit if e.kind == "skip"}
        busy = {e.entity.removeprefix("dataset:"): e.message for e in audit if e.kind == "busy"}
        for entry in audit:
            if entry.kind == "wait":  # a build lock: another run was building the table
                summary.waited.append(entry.message)
        summary.results += results_of_run(result, tables, partition, skips, busy)
        self.progress_lines.finish(tables)


class RunInProgress(RuntimeError):
    """Another ``medallion run`` kept this project busy for longer than this one would wait."""


@contextmanager
def one_run_at_a_time(
    settings: MedallionSettings, project: str, log: Callable[[str], None], wait_seconds: float
) -> Iterator[None]:
    """Hold the project's run lock for a whole ``medallion run``.

    Why a project-level lock on top of the per-table build locks: two whole-project runs at
    once would contend table by table (each waiting for the other's build, then skipping it)
    while each holds a Spark JVM; queueing the second behind the first ends the same way (it
    finds everything built and skips it, or builds what arrived meanwhile), with one Spark at
    a time and a log that says plainly what it waits for. The table locks still keep runs
    from ``dagster dev``, schedules and backfills off a table this run is building.
    """
    plane = ControlPlane.of(settings)
    locks = build_locks(plane.url, settings.lake_root)

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
