"""Build one executable Dagster asset per dataset from its spec; execution is the runtime's.

The asset function resolves resources, calls ``runtime.bronze_ingest`` (bronze) or
``runtime.table_build`` (silver, gold), loads the warehouse for gold tables with a target, and
returns a ``MaterializeResult`` whose data version is the published lake version, with one
``AssetCheckResult`` per validation rule. When a blocking check fails, the check results are
reported, nothing is published and the step fails, so downstream assets of the run do not run.
"""

import time
from collections.abc import Iterator
from typing import Any

import dagster as dg  # no "from __future__ import annotations": Dagster reads the hints

from medallion_assets.adapters.build_lock import build_lock
from medallion_assets.adapters.masking import masked_step
from medallion_assets.adapters.resources import (
    LakeResource,
    S3Resource,
    SparkResource,
    WarehouseResource,
)
from medallion_assets.adapters.translator import DatasetTranslator, step_name, table_key
from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.operations import RetryPolicy
from medallion_assets.catalog.rules import ReconciliationRule
from medallion_assets.checks.results import CheckResult, ChecksFailed
from medallion_assets.checks.table_rules import reconciliation_message, reconciliation_result
from medallion_assets.control.healing_actions import HealingContext, run_actions
from medallion_assets.control.state import LoadRecord
from medallion_assets.io.warehouse import LoadUnit
from medallion_assets.planner.diagnosis import Failure, causes, diagnose, retry_delay
from medallion_assets.planner.reroute import PRIMARY, Route, along
from medallion_assets.runtime.bronze_ingest import ingest
from medallion_assets.runtime.faults import crash_point
from medallion_assets.runtime.table_build import build_table

RESOURCE_KEYS = {"spark", "lake", "s3", "warehouse", "control"}


def retry_policy(catalog: Catalog, dataset: Dataset) -> dg.RetryPolicy | None:
    policy = policy_of(catalog, dataset)
    return None if policy is None else to_dagster_retry(policy)


def to_dagster_retry(policy: RetryPolicy) -> dg.RetryPolicy | None:
    if policy.max_retries == 0:
        return None
    backoff = dg.Backoff.EXPONENTIAL if policy.backoff == "exponential" else dg.Backoff.LINEAR
    jitter = {"none": None, "full": dg.Jitter.FULL, "plus_minus": dg.Jitter.PLUS_MINUS}
    return dg.RetryPolicy(
        max_retries=policy.max_retries,
        delay=policy.delay_seconds or None,
        backoff=backoff if policy.delay_seconds else None,
        jitter=jitter[policy.jitter] if policy.delay_seconds else None,
    )


def build_assets(catalog: Catalog, translator: DatasetTranslator) -> list[dg.AssetsDefinition]:
    return [_asset(catalog, dataset, translator) for dataset in catalog.datasets.values()]


def _asset(
    catalog: Catalog, dataset: Dataset, translator: DatasetTranslator
) -> dg.AssetsDefinition:
    spec = translator.get_asset_spec(dataset)

    @dg.multi_asset(
        specs=[spec],
        check_specs=translator.get_check_specs(dataset),
        name=step_name(dataset.name),
        pool=dataset.system,  # `dagster instance concurrency set <system> N` caps the system
        retry_policy=retry_policy(catalog, dataset),
        partitions_def=spec.partitions_def,
        # Subsettable: a run may skip the table (kill switch) or run only its checks.
        can_subset=True,
        # A backfill over a date range runs as one run that builds each day in turn.
        backfill_policy=dg.BackfillPolicy.single_run() if spec.partitions_def else None,
        # Resource keys rather than typed parameters: Dagster then skips inspecting each of
        # thousands of asset functions' signatures when the code location loads.
        required_resource_keys=RESOURCE_KEYS,
    )
    @masked_step  # nothing the step logs or raises carries a password
    def _materialize(context: dg.AssetExecutionContext) -> Iterator[Any]:
        resources = context.resources
        plane = resources.control.plane()  # one per step: flags and audit share its store
        if switched_off(context, catalog, dataset, plane):
            return
        if table_key(dataset.name) not in context.selected_asset_keys:
            yield from check_current_version(context, catalog, dataset, resources)
            return
        audit = Audit(plane.store(), dataset, context)
        route, warning = plane.route(catalog, dataset)  # read now: a reroute is sticky
        if warning:
            context.log.warning(warning)
        along_route = "" if route.name == PRIMARY else f" along route {route.describe()}"
        audit.record("attempt", f"attempt {audit.attempt} started{along_route}", route=route.name)
        unchanged = False
        try:
            with build_lock(context, dataset, resources.lake.lake.root, plane) as held:
                if not held:
                    return  # another run is building it: skipped, said so
                for event in materialize_dataset(
                    context,
                    catalog,
                    dataset,
                    resources.spark,
                    resources.lake,
                    resources.s3,
                    resources.warehouse,
                    route=route,
                ):
                    if isinstance(event, dg.MaterializeResult):
                        unchanged = bool((event.metadata or {}).get("skipped"))
                    yield event
        except dg.DagsterExecutionInterruptedError as interruption:
            # The run is being terminated (kill switch sensor, Terminate in the UI): the
            # asset's retry policy must not bring the step back.
            audit.record("outcome", "interrupted: the run is being terminated; not retried")
            raise dg.Failure(
                description=f"{dataset.name}: interrupted, the run is being terminated; "
                "nothing was published",
                allow_retries=False,
            ) from interruption
        except dg.Failure as failure:  # blocking checks, or a failure already classified
            audit.record("outcome", f"failed: {(failure.description or '')[:500]}")
            raise
        except Exception as error:
            heal_and_retry(context, catalog, dataset, resources, audit, error)
        else:
            if unchanged:
                audit.record("outcome", "skipped: code and inputs unchanged; current version kept")
            else:
                audit.record("outcome", f"materialized on attempt {audit.attempt}")

    return _materialize


class Audit:
    """Audit-log entries of one table's step: attempt, error, healing, outcome."""

    def __init__(self, store: Any, dataset: Dataset, context: dg.AssetExecutionContext):
        self.store = store
        self.attempt = context.retry_number + 1
        self.run_id = context.run.run_id
        partition = f"[{context.partition_key}]" if context.has_partition_key else ""
        self.entity = f"dataset:{dataset.name}"
        self.where = f"{dataset.name}{partition}"

    def record(self, kind: str, message: str, **details: Any) -> None:
        self.store.record(
            kind,
            self.entity,
            f"{self.where}: {message}",
            run_id=self.run_id,
            details={"attempt": self.attempt, **details},
        )


def heal_and_retry(
    context: dg.AssetExecutionContext,
    catalog: Catalog,
    dataset: Dataset,
    resources: Any,
    audit: Audit,
    error: Exception,
) -> None:
    """Classify the error by the healing rules, run their actions, then retry with the
    policy's backoff, or fail at once when the rule says the error is permanent. Raises."""
    if interrupted(context, error):
        audit.record("outcome", "interrupted: the run is being terminated; not retried")
        raise error
    failure = Failure.of(error)
    diagnosis = diagnose(catalog.healing_rules, failure)
    first_line = failure.summary  # a Java trace's root cause, not its 500 lines
    audit.record(
        "error",
        f"{diagnosis.error_code} ({type(error).__name__}): {first_line}",
        rule=diagnosis.rule,
        sqlstate=failure.sqlstate,
        then=diagnosis.then,
    )
    if diagnosis.permanent:
        fix = f". Fix: {diagnosis.fix}" if diagnosis.fix else ""
        message = (
            f"{dataset.name}: {diagnosis.error_code} is permanent ({diagnosis.source()}); "
            f"failing without retries: {first_line}{fix}"
        )
        audit.record("outcome", f"failed fast: {diagnosis.error_code}, not retried")
        raise dg.Failure(description=message, allow_retries=False) from error
    policy = policy_of(catalog, dataset, context.run.tags.get("pipeline"))
    healing = HealingContext(
        catalog,
        dataset,
        context.partition_key if context.has_partition_key else None,
        resources.lake.lake,
        diagnosis,
        failure,
        audit.attempt,
        policy,
        spark=resources.spark.session(),  # refresh_connection drops a Spark Connect session
        error=error,
        run_id=context.run.run_id,
        control=audit.store,
    )
    routed_before = audit.store.routes().get(dataset.name)
    for action, did in run_actions(healing):
        audit.record("healing", f"{action}: {did}", action=action, error_code=diagnosis.error_code)
    retries = policy.max_retries if policy else 0
    if diagnosis.then == "reroute":
        rerouted = audit.store.routes().get(dataset.name)
        if rerouted == routed_before:
            audit.record("outcome", f"failed: {diagnosis.error_code}, no route left to take")
            raise dg.Failure(
                description=f"{dataset.name}: {diagnosis.error_code} (healing rule "
                f"{diagnosis.rule}) and no replica or alternate is left to reroute to: "
                f"{first_line}",
                allow_retries=False,
            ) from error
        # A new route is a new attempt at once, whatever the policy's limit: the walk through
        # the routes is finite (each is taken once, in cost order).
        route = rerouted.route if rerouted is not None else PRIMARY
        audit.record("retry", f"retrying at once along route {route}")
        raise dg.RetryRequested(max_retries=max(retries, audit.attempt)) from error
    if audit.attempt > retries:
        audit.record("outcome", f"failed after {audit.attempt} attempt(s): {diagnosis.error_code}")
        raise dg.Failure(  # one line; the error and its trace stay in the event log as the cause
            description=f"{dataset.name}: failed after {audit.attempt} attempt(s), "
            f"{diagnosis.error_code}: {first_line}",
            allow_retries=False,
        ) from error
    delay = retry_delay(policy, audit.attempt) if policy else 0.0
    audit.record("retry", f"retrying in {delay:.1f} s (retry {audit.attempt} of {retries})")
    raise dg.RetryRequested(max_retries=retries, seconds_to_wait=delay) from error


def interrupted(context: dg.AssetExecutionContext, error: BaseException) -> bool:
    """The step failed because its run is being terminated (the kill switch sensor, the UI's
    Terminate): the error is the interruption or what it broke (a Spark job cancelled), and a
    retry would only defeat the termination."""
    if any(isinstance(e, dg.DagsterExecutionInterruptedError) for e in causes(error)):
        return True
    run = context.instance.get_run_by_id(context.run.run_id)
    return run is not None and run.status in (
        dg.DagsterRunStatus.CANCELING,
        dg.DagsterRunStatus.CANCELED,
    )


def policy_of(
    catalog: Catalog, dataset: Dataset, pipeline: str | None = None
) -> RetryPolicy | None:
    """The retry policy in force: the dataset's own, else its pipeline's default (the run's
    pipeline), else the project default."""
    run_pipeline = catalog.pipelines.get(pipeline) if pipeline else None
    name = (
        dataset.settings.retry_policy
        or (run_pipeline.retry_policy if run_pipeline else None)
        or catalog.default_retry_policy
    )
    return catalog.retry_policies[name] if name else None


def switched_off(
    context: dg.AssetExecutionContext, catalog: Catalog, dataset: Dataset, plane: Any
) -> bool:
    """The kill switch at the table boundary: flags are read now, so a flag flipped while the
    run is executing stops this table (and, through Dagster, what depends on it in the run)."""
    pipelines = [context.run.tags["pipeline"]] if "pipeline" in context.run.tags else []
    off = plane.disabled(catalog, [dataset.name], pipelines)
    if dataset.name not in off:
        return False
    message = f"skipped: {off[dataset.name].describe()}; the current version stays published"
    context.log.warning(message)
    plane.store().record(
        "skip",
        f"dataset:{dataset.name}",
        message,
        run_id=context.run.run_id,
        details={"flag": off[dataset.name].flag.entity},
    )
    return True


def materialize_dataset(
    context: dg.AssetExecutionContext,
    catalog: Catalog,
    dataset: Dataset,
    spark: SparkResource,
    lake: LakeResource,
    s3: S3Resource,
    warehouse: WarehouseResource,
    route: Route | None = None,
) -> Iterator[Any]:
    """Build (or ingest) the table for each partition of the step, along ``route`` when it is
    not the primary: a source replica for bronze, an alternate producer's SQL otherwise."""
    session = spark.session()
    partitions: list[str | None] = [None]
    if context.has_partition_key:
        partitions = [context.partition_key]
    elif context.has_partition_key_range:
        partitions = list(context.partition_keys)
    per_partition = []
    for partition in partitions:
        try:
            per_partition.append(
                _materialize_one(
                    context, catalog, dataset, session, lake, s3, warehouse, partition, route
                )
            )
        except ChecksFailed as failed:
            done = [c for _, _, checks in per_partition for c in checks]
            yield from check_results(
                dataset, [*done, *failed.validation.results], selected_checks(context)
            )
            raise dg.Failure(
                description=str(failed),
                metadata={
                    "failed_checks": [r.name for r in failed.validation.blocking_failures],
                    "rejected_staging": str(failed.staging),
                    "blocked_since": failed.since or time.time(),
                },
                allow_retries=False,  # the same data fails the same check: retrying cannot help
            ) from failed
    checks = [c for _, _, results in per_partition for c in results]
    if len(per_partition) == 1:
        version, metadata, _ = per_partition[0]
        yield dg.MaterializeResult(
            data_version=dg.DataVersion(version.version_id),
            metadata=metadata,
            check_results=list(check_results(dataset, checks, selected_checks(context))),
        )
        _raise_on_blocking(dataset, checks)
        return
    metadata = {
        "partitions": len(per_partition),
        "rows": sum(v.rows for v, _, _ in per_partition),
        "skipped": all(m["skipped"] for _, m, _ in per_partition),
        "lake_versions": dg.MetadataValue.json(
            {v.partition: v.version_id for v, _, _ in per_partition}
        ),
    }
    yield dg.MaterializeResult(
        metadata=metadata,
        check_results=list(check_results(dataset, checks, selected_checks(context))),
    )
    _raise_on_blocking(dataset, checks)


def _raise_on_blocking(dataset: Dataset, checks: list[CheckResult]) -> None:
    """A blocking check that fails after publishing (the warehouse reconciliation) still
    fails the step, so nothing downstream builds on an unreconciled load."""
    failed = [c for c in checks if c.blocking_failure]
    if failed:
        raise dg.Failure(
            description=f"{dataset.name}: "
            + "; ".join(f"{c.name} ({c.kind}): {c.message}" for c in failed),
            metadata={"failed_checks": [c.name for c in failed]},
            allow_retries=False,
        )


def selected_checks(context: dg.AssetExecutionContext) -> set[str]:
    return {key.name for key in context.selected_asset_check_keys}


def check_current_version(
    context: dg.AssetExecutionContext, catalog: Catalog, dataset: Dataset, resources: Any
) -> Iterator[dg.AssetCheckResult]:
    """Only checks were selected (e.g. "Execute checks" in the UI): evaluate them on the
    published version, without building anything."""
    from medallion_assets.checks.results import CheckContext
    from medallion_assets.checks.validation import data_rules, validate_frame

    lake = resources.lake.lake
    partition = context.partition_key if context.has_partition_key else None
    paths = lake.current_paths(dataset.name, [partition] if partition else None)
    if not paths:
        raise dg.Failure(f"{dataset.name} has no published version to check: materialize it")
    session = resources.spark.session()
    frame = session.read.parquet(*[str(p) for p in paths])
    chosen = [r for r in data_rules(dataset) if r.label() in selected_checks(context)]
    checked = CheckContext(session, lake, catalog, dataset, partition)
    results = validate_frame(frame, checked, chosen).results
    yield from check_results(dataset, list(results), selected_checks(context))


def check_results(
    dataset: Dataset, results: list[CheckResult], only: set[str] | None = None
) -> Iterator[dg.AssetCheckResult]:
    """One ``AssetCheckResult`` per check (those in ``only``, when given); results of several
    partitions are combined."""
    by_name: dict[str, list[CheckResult]] = {}
    for result in results:
        if only is None or result.name in only:
            by_name.setdefault(result.name, []).append(result)
    for name, parts in by_name.items():
        first = parts[0]
        failed = [p for p in parts if not p.passed]
        samples = [s for p in failed for s in p.samples][:5]
        metadata: dict[str, Any] = {
            "kind": first.kind,
            "failing_rows": sum(p.failing_rows for p in parts),
            "total_rows": sum(p.total_rows for p in parts),
            "engine": first.engine,
            "message": "; ".join(p.message for p in (failed or parts))[:2000],
            "seconds": round(sum(p.seconds for p in parts), 3),
        }
        if samples:
            metadata["sample_failing_rows"] = dg.MetadataValue.json(samples)
        if len(parts) > 1:
            metadata["partitions"] = len(parts)
        reused = {p.details.get("reused_from") for p in parts} - {None}
        if reused:
            metadata["reused_from"] = ", ".join(sorted(reused))
        yield dg.AssetCheckResult(
            asset_key=table_key(dataset.name),
            check_name=name,
            passed=not failed,
            severity=(
                dg.AssetCheckSeverity.ERROR
                if first.severity == "error"
                else dg.AssetCheckSeverity.WARN
            ),
            metadata=metadata,
            description=metadata["message"][:500],
        )


def _materialize_one(
    context: dg.AssetExecutionContext,
    catalog: Catalog,
    dataset: Dataset,
    session: Any,
    lake: LakeResource,
    s3: S3Resource,
    warehouse: WarehouseResource,
    partition: str | None,
    route: Route | None = None,
) -> tuple[Any, dict[str, Any], list[CheckResult]]:
    log = context.log.info
    metadata: dict[str, Any] = {}
    replica = route.replica if route is not None else None
    if route is not None and route.name != PRIMARY:
        metadata["route"] = route.describe()
        dataset = along(dataset, route)
        log(f"{dataset.name}: read along route {route.describe()}")
    if dataset.layer == "bronze":
        store = s3.store(replica.system if replica is not None else dataset.system)
        with store.throttle.slot():  # max_concurrent_jobs within this process
            outcome = ingest(
                session,
                lake.lake,
                store,
                lake.landing_root,
                catalog,
                dataset,
                partition,
                state=context.resources.control.plane().state(),
                run_id=context.run.run_id,
                log=log,
                replica=replica,
                warn=context.log.warning,
            )
        build = outcome.build
        metadata.update(outcome.metadata)
        usage = store.throttle.usage()
        metadata.update(
            {
                "s3_requests": usage.requests,
                "s3_bytes": usage.bytes,
                "s3_requests_per_second": round(usage.requests_per_second, 2),
                "s3_bytes_per_second": round(usage.bytes_per_second, 1),
                "throttle_waited_seconds": round(usage.waited_seconds, 3),
            }
        )
    else:
        build = build_table(
            session, lake.lake, catalog, dataset, partition, run_id=context.run.run_id, log=log
        )
    version = build.version
    metadata.update(
        {
            "rows": version.rows,
            "dagster/row_count": version.rows,
            "lake_version": version.version_id,
            "skipped": build.skipped,
            "inputs": dg.MetadataValue.json(version.inputs),
        }
    )
    if build.skipped:
        metadata["skip_reason"] = build.reason
    checks = list(build.validation.results)
    if dataset.target is not None:
        if not build.skipped:
            crash_point("lake.published", dataset.name, partition)
        loaded = load_warehouse(context, dataset, session, lake, warehouse, version)
        metadata.update(loaded)
        checks += [
            reconciliation_result(
                rule,
                loaded["warehouse_expected_rows"],
                loaded["warehouse_rows"],
                f"{dataset.name}[{partition}]" if partition else dataset.name,
                loaded["warehouse_duplicate_keys"],
            )
            for rule in dataset.rules
            if isinstance(rule, ReconciliationRule)
        ]
    return version, metadata, checks


def load_warehouse(
    context: dg.AssetExecutionContext,
    dataset: Dataset,
    session: Any,
    lake: LakeResource,
    warehouse: WarehouseResource,
    version: Any,
) -> dict[str, Any]:
    """Load the published version (of the partition) into the warehouse, unless the warehouse's
    load ledger says it already holds that version: a rerun, a backfill over loaded days or a
    run after a crash loads nothing twice, and a new version replaces the partition's rows."""
    assert dataset.target is not None
    partitions = dataset.settings.partitions
    unit = LoadUnit(
        dataset.name,
        version.version_id,
        version.rows,
        version.partition,
        partitions.column if partitions is not None and version.partition else None,
        context.run.run_id,
    )
    target_warehouse = warehouse.connect()
    try:
        report = target_warehouse.held(dataset.target, unit)
        if report is not None:
            context.log.info(f"warehouse already holds {unit.describe()}")
        else:
            data = session.read.parquet(str(lake.lake.version_path(version))).toArrow()
            report = target_warehouse.load(
                dataset.target, data, unit, throttle=warehouse.throttle(dataset.target.system)
            )
    finally:
        target_warehouse.close()
    crash_point("warehouse.loaded", dataset.name, version.partition)
    # After the warehouse's commit, for operators (its ledger stays the authority).
    record = LoadRecord.committed(unit, report, dataset.target.warehouse_table)
    context.resources.control.plane().state().record_load(record, held=report.unchanged)
    reconciled_by_check = any(isinstance(r, ReconciliationRule) for r in dataset.rules)
    if not report.reconciled and not reconciled_by_check:
        raise RuntimeError(f"{dataset.target.warehouse_table}: {reconciliation_message(report)}")
    if not report.unchanged:
        context.log.info(
            f"loaded {report.rows_staged} rows of {unit.describe()} into "
            f"{dataset.target.warehouse_table} ({report.mode}); {report.rows_in_table} rows in "
            f"{'the partition' if report.partition else 'the table'}"
        )
    return {
        "warehouse_table": dataset.target.warehouse_table,
        "warehouse_rows": report.rows_in_table,
        "warehouse_expected_rows": report.expected_rows,
        "warehouse_duplicate_keys": report.duplicate_keys,
        "warehouse_rows_loaded": report.rows_staged,
        "warehouse_loaded": "unchanged" if report.unchanged else "loaded",
        "warehouse_reconciled": report.reconciled,
    }
