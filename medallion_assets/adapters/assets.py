"""One executable Dagster asset per dataset; executing a table is ``TableRunner.run``'s.

The step reads the kill switch, takes the table's build lock, builds a ``TableRun`` from its
context and resources and hands it to the runner once per day it builds, then reports the
outcome as a ``MaterializeResult`` (data version: the published lake version) with one
``AssetCheckResult`` per validation rule (``checks.py``). A failed blocking check publishes
nothing and fails the step, so downstream assets do not run; any other failure is audited,
healed and retried or failed by ``retry.py``.
"""

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import dagster as dg  # no "from __future__ import annotations": Dagster reads the hints

from medallion_assets.adapters.build_lock import build_lock, partitions_of
from medallion_assets.adapters.check_inputs import wait_for_check_inputs
from medallion_assets.adapters.checks import (
    check_current_version,
)
from medallion_assets.adapters.masking import masked_step
from medallion_assets.adapters.materialize import StepEvent, materialize_dataset
from medallion_assets.adapters.openlineage_events import StepLineage
from medallion_assets.adapters.retry import heal_and_retry
from medallion_assets.adapters.run_summary import NOT_RUN, PUBLISHED, UNAVAILABLE
from medallion_assets.adapters.threads import step_interrupted
from medallion_assets.adapters.translator import (
    DatasetTranslator,
    Names,
    StepOptions,
    StepResources,
)
from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.selection import select_tables
from medallion_assets.control.engine import ControlStoreError
from medallion_assets.control_plane import ControlPlane
from medallion_assets.environments.scope import in_env
from medallion_assets.errors import causes, headline
from medallion_assets.lake.catalog import LakeCatalogError
from medallion_assets.runtime import stop
from medallion_assets.runtime.step_guard import Audit, NotBuilt, StepFacts, StepGuard
from medallion_assets.runtime.stop import Stop
from medallion_assets.runtime.table_run import (
    CheckInputsNotPublished,
    RunLog,
    SessionOnDemand,
    TableRun,
)
from medallion_assets.runtime.table_runner import TableRunner


def build_assets(
    catalog: Catalog,
    translator: DatasetTranslator,
    runner: TableRunner | None = None,
    executes: frozenset[str] | None = None,
    step: StepOptions | None = None,
) -> list[dg.AssetsDefinition | dg.AssetSpec]:
    """An executable asset per table ``executes`` holds (None: all); the others as their spec
    alone, so their lineage shows where another code location builds them."""
    runner, step = runner or TableRunner(), step or StepOptions()
    return [
        _asset(catalog, dataset, translator, runner, step)
        if executes is None or dataset.name in executes
        else translator.get_asset_spec(dataset)
        for dataset in catalog.datasets.values()
    ]


def _asset(
    catalog: Catalog,
    dataset: Dataset,
    translator: DatasetTranslator,
    runner: TableRunner,
    step: StepOptions,
) -> dg.AssetsDefinition:
    spec = translator.get_asset_spec(dataset)
    names = translator.names
    single_run = dg.BackfillPolicy.single_run() if spec.partitions_def else None

    @dg.multi_asset(
        specs=[spec],
        check_specs=translator.get_check_specs(dataset),
        name=names.step(dataset.name),
        description=step.description,
        op_tags=step.tags,
        # `dagster instance concurrency set <pool> N` caps it
        pool=step.pool or names.name(dataset.system),
        # No retry_policy: the step itself retries (RetryRequested), see adapters/retry.py.
        partitions_def=spec.partitions_def,
        # Subsettable: a run may skip the table (kill switch) or run only its checks.
        can_subset=True,
        # A backfill over a date range runs as one run that builds each day in turn.
        backfill_policy=step.backfill_policy or single_run,
        # Resource keys rather than typed parameters: Dagster then skips inspecting each of
        # thousands of asset functions' signatures when the code location loads.
        required_resource_keys=names.resource_keys(),
    )
    @masked_step(names.resource("control"))  # nothing it logs or raises carries a password
    def _materialize(context: dg.AssetExecutionContext) -> Iterator[StepEvent]:
        with the_run_stops_when_its_stores_go():
            yield from TableStep.of(context, catalog, dataset, names).events(runner)

    return _materialize


@dataclass(frozen=True)
class TableStep:
    """One Dagster step of one table: its context, its project's resources, the ``TableRun``
    it hands the runner and the run's control plane, whose decisions around the build are the
    ``StepGuard``'s (``runtime/step_guard.py``)."""

    context: dg.AssetExecutionContext
    resources: StepResources
    plane: ControlPlane
    run: TableRun

    @classmethod
    def of(
        cls, context: dg.AssetExecutionContext, catalog: Catalog, dataset: Dataset, names: Names
    ) -> "TableStep":
        resources = names.resources_of(context)
        plane: ControlPlane = resources.control.plane()
        run = table_run(context, catalog, dataset, plane, resources)
        if dataset.check_dependencies:  # its step may start beside the tables its checks read
            run = replace(run, check_inputs=_check_inputs(context, names))
        return cls(context, resources, plane, run)

    def guard(self, lineage: StepLineage | None = None) -> StepGuard:
        """The step's guard (one per step: it reads the control flags once)."""
        facts = StepFacts(self.context.run.tags, self.context.retry_number + 1)
        return StepGuard(self.run, self.plane, facts, lineage)

    def events(self, runner: TableRunner) -> Iterator[StepEvent]:
        """The step: the checks alone when only they were selected; nothing before the table's
        first day or when the kill switch or the run's profile leaves it out; else the build,
        guarded (``table_guard``)."""
        context, run = self.context, self.run
        dataset = run.dataset
        if context.asset_key not in context.selected_asset_keys:
            if self.guard().left_out() is None:
                if run.check_inputs is not None:
                    run.check_inputs()  # the checks read the tables as the run leaves them
                yield from check_current_version(context, with_spark(context, run, self.resources))
            return
        if not partitions_of(context, dataset):
            start = dataset.settings.partitions.start if dataset.settings.partitions else None
            context.log.info(
                f"{dataset.name}: nothing to build: the run's days are before the table's "
                f"partitions.start {start}"
            )
            return
        lineage = StepLineage.of(  # None: OpenLineage off
            context, run.catalog, dataset, run, self.resources.warehouse
        )
        guard = self.guard(lineage)
        if guard.left_out() is not None:
            return
        spark_log = self.resources.lake.settings.spark_log_file
        spark = self.resources.spark.opened_session  # healing never starts Spark
        with table_guard(context, run, guard.audit, lineage, spark, spark_log):
            yield from _build_step(context, runner, guard, self.resources, lineage)


@contextmanager
def table_guard(
    context: dg.AssetExecutionContext,
    run: TableRun,
    audit: Audit,
    lineage: StepLineage | None,
    spark: Callable[[], Any],
    spark_log: Path | None = None,
) -> Iterator[None]:
    """What a build's end becomes: lineage COMPLETE; a terminated run's step interrupted, never
    retried; a ``dg.Failure`` (blocking checks, or already classified) audited and raised;
    any other error healed and retried, or failed, by the healing rules (``heal_and_retry``)."""
    try:
        yield
        if lineage:
            lineage.complete()
    except dg.DagsterExecutionInterruptedError as interruption:
        # The run is being terminated (kill switch sensor, Terminate in the UI): the
        # step must not come back.
        if lineage:
            lineage.abort("the run is being terminated (kill switch, pre-emption or user)")
        raise interrupted(run.dataset, audit) from interruption
    except dg.Failure as failure:
        audit.record("outcome", f"failed: {(failure.description or '')[:500]}")
        if lineage:
            lineage.fail(failure)
        raise
    except Exception as error:
        if step_interrupted(context.run.run_id):  # a worker thread's step: its Spark job
            if lineage:  # was cancelled by the executor
                lineage.abort("the run is being terminated (kill switch or pre-emption)")
            raise interrupted(run.dataset, audit) from error
        if isinstance(error, CheckInputsNotPublished):  # as Dagster leaves a step not run
            audit.record("outcome", str(error))
            if lineage:
                lineage.abort(str(error))
            raise dg.Failure(str(error), metadata={NOT_RUN: True}, allow_retries=False) from None
        if lineage:
            lineage.fail(error)
        heal_and_retry(context, run, audit, error, spark, spark_log)


@contextmanager
def the_run_stops_when_its_stores_go() -> Iterator[None]:
    """Around an asset body: losing the control store (or the lake's catalog) mid-step stops
    the whole ``medallion run`` (no further step starts; it says so in one line) instead of
    failing every later step the same way; the step fails at once, without retries (its
    retries would need the store). Under ``dagster dev`` the step just fails so. A context,
    not a wrapper: a table's run from the executor to its catalog commit stays ten calls."""
    try:
        yield
    except Exception as error:
        gone = next((e for e in causes(error) if isinstance(e, STORES_GONE)), None)
        if gone is None:
            raise
        said = headline(gone)
        stop.request_stop(Stop(f"stopped: {said}", 1))
        raise dg.Failure(description=said, allow_retries=False) from None


# What a step cannot go on without: the control store (flags, manifests, audit, locks) and the
# lake's catalog (every read and publish).
STORES_GONE = (ControlStoreError, LakeCatalogError)


def interrupted(dataset: Dataset, audit: Audit) -> dg.Failure:
    """The failure of a step whose run is being terminated; never retried."""
    audit.record("outcome", "interrupted: the run is being terminated; not retried")
    return dg.Failure(
        description=f"{dataset.name}: interrupted, the run is being terminated; "
        "nothing was published",
        allow_retries=False,
    )


def _build_step(
    context: dg.AssetExecutionContext,
    runner: TableRunner,
    guard: StepGuard,
    resources: StepResources,
    lineage: StepLineage | None,
) -> Iterator[StepEvent]:
    """The build between the guard's ``begin`` and ``finished``: under the table's build lock,
    along the route in force, each day through the runner."""
    begun = guard.begin()
    if isinstance(begun, NotBuilt):  # an output, so the tables rerouted around it still run
        said: dict[str, Any] = {"skipped": True, UNAVAILABLE: begun.why, PUBLISHED: begun.published}
        yield dg.MaterializeResult(metadata=said)
        return
    run, unchanged = guard.run, False
    with build_lock(context, run.dataset, guard.plane, resources.lake.settings) as held:
        if not held:
            guard.held_elsewhere()
            return  # another run is building it: skipped, said so
        routed = replace(with_spark(context, run, resources), route=begun)
        seen = lineage.outcomes if lineage else None
        for event in materialize_dataset(context, runner, routed, seen):
            if isinstance(event, dg.MaterializeResult):
                unchanged = bool((event.metadata or {}).get("skipped"))
            yield event
    guard.finished(unchanged)


# A full refresh: build even when code and inputs are unchanged, and an append or merge table
# from its whole input. "*" (or "1"): every table of the run; else a selection of tables, as
# `medallion backfill --select` takes it (silver.orders_usd,gold.*,layer:silver).
FULL_REFRESH_TAG = "medallion/full_refresh"
# A dev environment's run (`medallion run --env NAME`): what it builds publishes to the
# tables' branches env_NAME, reading what it does not build from main.
ENV_TAG = "medallion/env"


def full_refresh(catalog: Catalog, tags: Mapping[str, str], table: str) -> bool:
    """Whether the run's ``medallion/full_refresh`` tag asks for ``table`` in full."""
    value = tags.get(FULL_REFRESH_TAG, "").strip()
    if not value:
        return False
    if value in ("*", "1"):
        return True
    try:
        return table in select_tables(catalog, value)
    except ValueError as error:
        raise dg.Failure(  # the same for every step of the run: not retried
            description=f"run tag {FULL_REFRESH_TAG}={value!r}: "
            f"{str(error).removeprefix('--select ')} (or * for every table)",
            allow_retries=False,
        ) from None


def table_run(
    context: dg.AssetExecutionContext,
    catalog: Catalog,
    dataset: Dataset,
    plane: ControlPlane,
    resources: StepResources,
) -> TableRun:
    """The step's run of ``dataset``, without its Spark session (``with_spark``) and route."""
    env = context.run.tags.get(ENV_TAG) or None
    if env is not None:  # a dev environment's run: its branches, its warehouse schemas
        dataset = in_env(dataset, env, resources.lake.settings.env_warehouse)
    return TableRun(
        catalog=catalog,
        dataset=dataset,
        lake=resources.lake.lake.in_env(env),
        # a whole table run within a daily run (one job holds both) has no partition
        partition=context.partition_key
        if context.has_partition_key and dataset.settings.partitions is not None
        else None,
        run_id=context.run.run_id,
        log=RunLog(context.log.info, context.log.warning),
        objects=resources.s3,
        warehouse=resources.warehouse,
        control=plane.store(),
        rebuild=full_refresh(catalog, context.run.tags, dataset.name),
    )


def _check_inputs(context: dg.AssetExecutionContext, names: Names) -> Callable[[], list[str]]:
    """Waits for the steps of the run the step started beside (``check_inputs.py``); the
    tables among them that did not publish."""
    run_id, step_key = context.run.run_id, str(context.op_execution_context.op_handle)

    def wait() -> list[str]:
        unpublished = wait_for_check_inputs(run_id, step_key, lambda: step_interrupted(run_id))
        return [names.table(key) for key in unpublished]

    return wait


def with_spark(
    context: dg.AssetExecutionContext, run: TableRun, resources: StepResources
) -> TableRun:
    """The run with a Spark session of the step's own, its jobs in the table's criticality's
    FAIR pool, opened when the step first needs it (a reused version needs none). Asked for at
    each use: refresh_connection drops a Spark Connect session."""
    pool, run_id = run.dataset.criticality, context.run.run_id
    label = run.dataset.name + (f"[{run.partition}]" if run.partition else "")
    return replace(
        run, spark=SessionOnDemand(lambda: resources.spark.step_session(pool, run_id, label))
    )
