"""Materialize the whole project without a webserver: the demo's main job.

The tables with nothing new are kept without a step (``run_plan``). Daily-partitioned tables
run once per day found in their raw sources (oldest first), on a thread, beside one run of the
unpartitioned tables that read no daily table; those that read one run once every day is done
(those downstream of a table that did not publish are left out, as one run would leave them).
The runs side by side share the worker slots. Runs are recorded in the Dagster instance of
``DAGSTER_HOME``, else in the project's own ``<project>/.medallion/dagster``.
"""

import os
import threading
import time
from collections.abc import Callable, Collection, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from medallion_assets.adapters.assets import ENV_TAG, FULL_REFRESH_TAG
from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.dagster_internals import PARTITION_NAME_TAG
from medallion_assets.adapters.instance import project_instance
from medallion_assets.adapters.lost_runs import mark_lost_runs_failed, process_tags
from medallion_assets.adapters.pools import apply_pool_limits, system_limits
from medallion_assets.adapters.priority import priority_of
from medallion_assets.adapters.progress import ProgressHandler, reporting_progress, run_config
from medallion_assets.adapters.resources import S3Resource
from medallion_assets.adapters.retry import RETRIES_BY_ORCHESTRATOR, RETRY_TAG
from medallion_assets.adapters.run_plan import plan_run
from medallion_assets.adapters.run_summary import RunSummary, TableResult, results_of_run
from medallion_assets.adapters.side_by_side import run_beside, side_by_side
from medallion_assets.adapters.step_order import StepOrder
from medallion_assets.adapters.threads import ThreadedExecutor, execute_on_threads
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.control.engine import ControlStoreError
from medallion_assets.control_plane import ControlPlane
from medallion_assets.errors import ResourceError
from medallion_assets.profiles.profiles import ALL
from medallion_assets.runtime import stop
from medallion_assets.runtime.ingest.source_objects import odd_day, partition_of, source_of
from medallion_assets.runtime.run_lock import one_run_at_a_time
from medallion_assets.runtime.spark_session import SparkWarmUp, driver_watch
from medallion_assets.settings import MedallionSettings

# How long `medallion run` waits for another one on the project: past an hour the other one is
# more likely hung than busy, and a person should look at it (`medallion run --wait`).
RUN_WAIT_SECONDS = 3600.0


def raw_partitions(
    catalog: Catalog,
    defs: dg.Definitions,
    on_odd: Callable[[str, str], None] = lambda entity, why: None,
) -> list[str]:
    """Days present in the raw data of every daily-partitioned source. A folder whose day
    cannot be one of its table's partitions (not a calendar day, in the future, before the
    table's ``partitions.start``) is left out and told to ``on_odd`` (the source's entity,
    why), and the other days run."""
    today = datetime.now(UTC).date()
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
        start = dataset.settings.partitions.start
        found = {d for d in (partition_of(source, o.key) for o in objects) if d is not None}
        for day in sorted(found):
            why = odd_day(day, start, today)
            if why is None:
                days.add(day)
            else:
                on_odd(
                    f"source:{name}",
                    f"skipped the raw folder of day {day} under s3://{source.bucket}/"
                    f"{source.prefix} for {dataset.name}: {why}; its objects are not read",
                )
    return sorted(days)


def run_project(
    project_root: Path,
    log: Callable[[str], None] = print,
    instance: dg.DagsterInstance | None = None,
    progress: bool = False,
    wait_seconds: float = RUN_WAIT_SECONDS,
    settings: MedallionSettings | None = None,
    *,
    warm_up: SparkWarmUp | None = None,
    run_lock_held: bool = False,
    full_refresh: str = "",
    catalog: Catalog | None = None,
    env: str | None = None,
    tables: Collection[str] | None = None,
) -> RunSummary:
    """Materialize every table (``tables``: those): each day of the daily tables, then the
    rest; with ``progress``, ``log`` gets a line as each step ends. Another ``medallion run``
    on the project is waited for up to ``wait_seconds`` (then ``RunInProgress``), unless the
    caller holds its run lock (``run_lock_held``) and maybe started Spark (``warm_up``).
    ``settings``: the caller's, else read from the environment now. ``full_refresh``: the
    tables to build in full even when unchanged (``*``: every table; else a selection);
    ``catalog``: the project as the caller loaded it; ``env``: a dev environment's run, onto
    its branches (``medallion run --env``)."""
    if settings is None:
        settings = MedallionSettings.from_env(os.environ, project_root)
    catalog = catalog or load_catalog(project_root)
    with ExitStack() as stack:
        # The run lock comes first: two runs creating the project's new instance at once race
        # on its SQLite schema, and a run that waited must plan from what the other one left.
        if not run_lock_held:
            stack.enter_context(
                one_run_at_a_time(settings, catalog.project.name, log, wait_seconds)
            )
        if instance is None:
            instance = stack.enter_context(
                project_instance(project_root, profiles=catalog.profiles)
            )
        tags = {FULL_REFRESH_TAG: full_refresh} if full_refresh else {}
        if env is not None:
            tags[ENV_TAG] = env
        summary = _run(settings, catalog, log, instance, progress, warm_up, tags, tables)
    return summary


def build_table(
    project_root: Path,
    table: str,
    partition: str | None = None,
    log: Callable[[str], None] = print,
    settings: MedallionSettings | None = None,
    retry: bool = True,
    rebuild: bool = False,
    catalog: Catalog | None = None,
) -> RunSummary:
    """Materialize one table (one day of a daily table) as one run on the project's instance:
    the same step as ``medallion run``'s (kill switch, build lock, checks, publish, warehouse
    load, audit, OpenLineage), for an orchestrator that runs each table as its own task.
    ``retry=False``: one attempt (the orchestrator retries), healing kept for the next;
    ``rebuild``: build even when unchanged (a damaged version); ``catalog``: the project as
    the caller loaded it."""
    if settings is None:
        settings = MedallionSettings.from_env(os.environ, project_root)
    catalog = catalog or load_catalog(project_root)
    dataset = catalog.datasets.get(table)
    if dataset is None:
        raise KeyError(f"{table} is not a table of the project (`medallion catalog show`)")
    daily = dataset.settings.partitions is not None
    if daily and partition is None:
        raise ValueError(f"{table} is daily: give the day with --partition YYYY-MM-DD")
    if not daily and partition is not None:
        raise ValueError(f"{table} has no days: leave --partition out")
    with project_instance(project_root, profiles=catalog.profiles) as instance:
        mark_lost_runs_failed(instance, log)
        apply_pool_limits(instance, system_limits(catalog), log)
        defs = definitions_for(catalog, DatasetTranslator(catalog, settings.warehouse_kind))
        plane = ControlPlane.of(settings)
        plane.store()
        priority = priority_of(catalog, plane, [table], ALL)
        order = StepOrder.of(catalog, plane.store(), None, priority.tags())
        started = time.perf_counter()
        job = defs.resolve_implicit_global_asset_job_def()
        with reporting_progress(1, None) as handler:
            handler.partition_of = _partition_of(instance)
            tags = priority.tags()
            if not retry:
                tags = {**tags, RETRY_TAG: RETRIES_BY_ORCHESTRATOR}
            if rebuild:
                tags = {**tags, FULL_REFRESH_TAG: "*"}
            steps = _Steps(job, instance, plane, handler, tags)
            steps.execute([table], partition, ThreadedExecutor(1, order))
        steps.summary.seconds = time.perf_counter() - started
        return steps.summary


def _run(
    settings: MedallionSettings,
    catalog: Catalog,
    log: Callable[[str], None],
    instance: dg.DagsterInstance,
    progress: bool,
    warm_up: SparkWarmUp | None,
    tags: Mapping[str, str],
    tables: Collection[str] | None = None,
) -> RunSummary:
    mark_lost_runs_failed(instance, log)
    apply_pool_limits(instance, system_limits(catalog), log)
    translator = DatasetTranslator(catalog, settings.warehouse_kind)
    defs = definitions_for(catalog, translator)
    chosen = [n for n in catalog.datasets if tables is None or n in tables]
    daily = [n for n in chosen if catalog.datasets[n].settings.partitions is not None]
    plain = [n for n in chosen if n not in daily]
    plane = ControlPlane.of(settings)
    plane.store()  # a store that cannot be used would fail every step alike: say so once, now

    def odd(entity: str, why: str) -> None:
        log(f"warning: {why}")
        plane.store().record("skip", entity, why)

    days = raw_partitions(catalog, defs, odd) if daily else []
    started = time.perf_counter()
    # One decision for the whole medallion run: the profile in force for the project (the
    # override for all, else active) gives every run its tags, its step order and skip_below.
    priority = priority_of(catalog, plane, list(catalog.datasets), ALL)
    order = StepOrder.of(catalog, plane.store(), None, priority.tags())
    run_tags = {**priority.tags(), **tags}
    plan = plan_run(catalog, defs, plane, days, run_tags)  # the tables with nothing new kept
    kept = plan.report(catalog, instance, plane, log) if plan else []
    on_day = {day: plan.tables(daily, day) if plan else daily for day in days}
    plain = plan.tables(plain) if plan else plain
    days = [day for day, tables in on_day.items() if tables]
    if not days and not plain:  # nothing to run: no Dagster run
        return RunSummary(kept, seconds=time.perf_counter() - started)
    total = sum(len(on_day[day]) for day in days) + len(plain)
    profile = f"profile {priority.source}; " if order else ""
    log(f"{profile}steps run {settings.workers} at a time (--max-workers)")
    if warm_up is not None:
        warm_up.wait()  # its JVM launch may hold the process's stderr
    job = defs.resolve_implicit_global_asset_job_def()
    # A Spark driver gone mid-run stops the run: said in one line, as a signal is.
    gone = driver_watch(lambda why: stop.request_stop(stop.Stop(why)))
    with reporting_progress(total, log if progress else None) as handler, gone:
        handler.partition_of = _partition_of(instance)
        slots = threading.BoundedSemaphore(settings.workers)  # shared by runs side by side
        steps = _Steps(job, instance, plane, handler, run_tags, RunSummary(kept))
        by_day = ThreadedExecutor(settings.workers, order, slots=slots, capture_logs=False)
        rest = ThreadedExecutor(settings.workers, order, slots=slots, capture_logs=False)
        # Each day of the daily tables in turn, on a thread, beside one run of the tables that
        # read no daily table; then, on that thread, those that do, as soon as every day and
        # each of their upstream tables in the run beside are done (no day to run: one run).
        after_days = [t for t in plain if t in catalog.downstream_of(daily)] if days else []
        beside = [t for t in plain if t not in after_days]
        waited_for = sorted(catalog.upstream_of(after_days) & set(beside))
        beside_over = threading.Event()

        def after_the_days(executor: ThreadedExecutor) -> None:
            ended = handler.wait_for(waited_for, beside_over)
            _after_days(catalog, steps, after_days, ended, executor, log)

        def each_day(executor: ThreadedExecutor) -> None:
            for day in days:
                log(f"materializing {len(on_day[day])} daily table(s) for {day} ...")
                steps.execute(on_day[day], day, executor)

        def days_then_their_readers() -> None:
            each_day(by_day)
            if after_days:
                after_the_days(by_day)

        together = side_by_side(instance)
        if not together:
            each_day(rest)
        with run_beside(days_then_their_readers if days and together else None):
            try:
                if beside:
                    log(f"materializing {len(beside)} table(s) ...")
                    steps.execute(beside, None, rest)
            finally:
                beside_over.set()
        if not (days and together) and after_days:
            after_the_days(rest)
    steps.summary.seconds = time.perf_counter() - started
    return steps.summary


def _after_days(
    catalog: Catalog,
    steps: "_Steps",
    tables: list[str],
    ended: Mapping[str, str],
    executor: ThreadedExecutor,
    log: Callable[[str], None],
) -> None:
    """Run ``tables`` (those reading daily tables), leaving out what one run would not start:
    a table downstream of one that did not publish, whichever run it was in. ``ended``: how
    the steps of their upstream tables in the run beside ended (not in the summary yet)."""
    with steps.lock:
        results = list(steps.summary.results)
    unpublished = [(r.table, r.label) for r in results if r.status in _UNPUBLISHED]
    unpublished += [(t, t) for t, status in sorted(ended.items()) if status in _UNPUBLISHED]
    reach = {t: catalog.downstream_of([t]) for t, _label in unpublished}
    missing = {table: [label for t, label in unpublished if table in reach[t]] for table in tables}
    left_out = {t: ", ".join(m) for t, m in missing.items() if m}
    for table, labels in left_out.items():
        steps.not_run([table], f"not run: an upstream table did not publish: {labels}")
    tables = [t for t in tables if t not in left_out and t not in {r.table for r in results}]
    if tables:
        log(f"materializing {len(tables)} table(s) that read daily tables ...")
        steps.execute(tables, None, executor)


_UNPUBLISHED = ("failed", "blocked", "not run")


def _partition_of(instance: dg.DagsterInstance) -> Callable[[str], str | None]:
    """The partition a run of this process executes, by run id (for its progress lines)."""
    known: dict[str, str | None] = {}

    def partition_of(run_id: str) -> str | None:
        if run_id not in known:
            run = instance.get_run_by_id(run_id)
            known[run_id] = run.tags.get(PARTITION_NAME_TAG) if run is not None else None
        return known[run_id]

    return partition_of


@dataclass
class _Steps:
    """The runs of one ``medallion run``: each executes tables (of one day) on a threaded
    executor, adding what became of them to ``summary`` (under ``lock``: the days' runs and
    the rest's may execute at once)."""

    job: dg.JobDefinition
    instance: dg.DagsterInstance
    plane: ControlPlane
    progress_lines: ProgressHandler
    tags: Mapping[str, str]  # every run's dagster/priority and medallion/profile
    summary: RunSummary = field(default_factory=RunSummary)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def execute(self, tables: list[str], partition: str | None, executor: ThreadedExecutor) -> None:
        stop.raise_if_requested()  # a stopped medallion run starts no further run
        result = execute_on_threads(
            self.job,
            [table_key(t) for t in tables],
            partition,
            self.instance,
            executor,
            # process tags: so the next medallion run can tell if this process was killed
            tags={**self.tags, **process_tags()},
            run_config=run_config(),
        )
        try:
            audit = self.plane.store().audit(run_id=result.run_id)
        except ControlStoreError:
            if stop.requested() is None:
                raise
            audit = []  # the store's loss stopped the run: said by the stop
        skips = {e.entity.removeprefix("dataset:"): e.message for e in audit if e.kind == "skip"}
        busy = {e.entity.removeprefix("dataset:"): e.message for e in audit if e.kind == "busy"}
        results = results_of_run(result, tables, partition, skips, busy)
        with self.lock:  # waited: another run was building the table (its build lock)
            self.summary.run_ids.append(result.run_id)
            self.summary.waited += [e.message for e in audit if e.kind == "wait"]
            self.summary.results += results
        self.progress_lines.finish(result.run_id, tables)
        stop.raise_if_requested()

    def not_run(self, tables: list[str], why: str) -> None:  # left out of this run, and why
        with self.lock:
            self.summary.results += [TableResult(t, None, "not run", message=why) for t in tables]
        self.progress_lines.finish("", tables)
