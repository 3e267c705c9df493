"""The one place a table is executed: ``TableRunner.run(table_run) -> TableOutcome``.

``run`` ingests (bronze) or builds (silver, gold) the table for the run's day, publishes it,
loads the published version into the warehouse when the table has a target, and reconciles the
load; it returns a plain ``TableOutcome`` (the version in force, metadata, check results).
``unchanged`` finds, without Spark and without writing, the outcome of a run that would have
nothing new to do (``medallion run`` asks it of every table before starting any step). The
Dagster step is a thin call to it, the way dagster-sling's assets call
``SlingResource.replicate``: subclass ``TableRunner``, override ``run`` (or one of ``ingest``,
``build``, ``load_warehouse``), and pass an instance to ``build_definitions(..., runner=...)``.

    class Timed(TableRunner):
        def run(self, table_run: TableRun) -> TableOutcome:
            started = time.monotonic()
            outcome = super().run(table_run)
            return outcome.with_metadata(seconds=time.monotonic() - started)

No Dagster here: what the runner needs from the run's resources comes through ``TableRun``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from medallion_assets.catalog.rules import ReconciliationRule
from medallion_assets.checks.results import CheckResult
from medallion_assets.checks.table_rules import reconciliation_message, reconciliation_result
from medallion_assets.control.state import LoadRecord
from medallion_assets.faults import crash_point
from medallion_assets.io.warehouse import LoadUnit
from medallion_assets.lake import Version
from medallion_assets.lake.env_refs import env_branch
from medallion_assets.runtime.ingest.bronze_ingest import ingest
from medallion_assets.runtime.reuse import (
    MissingInput,
    ingest_prefix,
    input_versions,
    reused_build,
    reused_ingest,
)
from medallion_assets.runtime.table_build import INCREMENT_KEYS, BuildOutcome, build_table, skipped
from medallion_assets.runtime.table_run import NoSparkSession, RunLog, TableRun
from medallion_assets.runtime.warehouse_changes import load_changes

if TYPE_CHECKING:
    from medallion_assets.catalog import Dataset
    from medallion_assets.catalog.models import Target
    from medallion_assets.checks.validation import Change
    from medallion_assets.io.warehouse import LoadReport
    from medallion_assets.throttles.throttle import ThrottledS3


@dataclass(frozen=True)
class TableOutcome:
    """What a table's run did: the version in force (new, or the current one kept when
    ``skipped``), plain metadata for its materialization, and every check result."""

    version: Version
    metadata: dict[str, Any] = field(default_factory=dict)
    checks: tuple[CheckResult, ...] = ()
    skipped: bool = False

    def with_metadata(self, **more: Any) -> TableOutcome:
        return replace(self, metadata={**self.metadata, **more})


def combined_metadata(outcomes: Sequence[TableOutcome]) -> dict[str, Any]:
    """The metadata of one step that built several days (a backfill run as one step)."""
    return {
        "partitions": len(outcomes),
        "rows": sum(o.version.rows for o in outcomes),
        "rows_written": sum(
            int(o.metadata.get("rows_written", o.version.rows)) for o in outcomes if not o.skipped
        ),
        "skipped": all(o.skipped for o in outcomes),
        "lake_versions": {o.version.partition: o.version.version_id for o in outcomes},
    }


class TableRunner:
    """Executes one table's run. Override ``run`` to wrap or replace the execution."""

    def unchanged(self, table_run: TableRun) -> TableOutcome | None:
        """What ``run`` would do when nothing is new for the table, found without Spark and
        without changing anything: its current version kept (no raw object landed, changed or
        went missing, or its code and upstream versions are those it was built from), its
        checks as recorded for that version (freshness judged again at this clock), and the
        warehouse holding it already. None when ``run`` would do more: ingest, build, load,
        read data (a check with no recorded result), or say something (a doubt about the
        version). Errors are raised as ``run`` would meet them."""
        if table_run.rebuild or table_run.rerouted:
            return None
        said: list[str] = []
        run = replace(table_run, spark=None, log=RunLog(said.append))
        dataset = run.dataset
        if dataset.layer == "bronze":
            if run.objects is None:
                return None
            bucket, prefix = ingest_prefix(run)
            with _source_store(run) as store:
                listed = store.list(bucket, prefix)
            version = reused_ingest(run, listed)
        else:
            try:
                sources = input_versions(run.lake, run.catalog, dataset, run.partition)
            except MissingInput:
                return None
            version = reused_build(run, sources, dataset.statement_kind == "merge")
        if version is None or said:
            return None
        try:
            build = skipped(
                run, version, f"skipped {run.label}: nothing new since version {version.version_id}"
            )
        except NoSparkSession:  # a check without a recorded result reads the data
            return None
        checks = list(build.validation.results)
        loaded: dict[str, Any] = {}
        if dataset.target is not None:
            held = self.held_load(run, version)
            if held is None:
                return None
            loaded = held
            checks += reconciled(run, held)
        metadata = {**_version_metadata(build), **loaded}
        return TableOutcome(version, metadata, tuple(checks), skipped=True)

    def run(self, table_run: TableRun) -> TableOutcome:
        """Ingest or build, publish, then load the warehouse and reconcile the load."""
        metadata: dict[str, Any] = {}
        route = table_run.route
        if route is not None and table_run.rerouted:
            metadata["route"] = route.describe()
            table_run = table_run.along_route()
            table_run.log.info(f"{table_run.dataset.name}: read along route {route.describe()}")
        if table_run.dataset.layer == "bronze":
            build = self.ingest(table_run, metadata)
        else:
            build = self.build(table_run)
        version = build.version
        metadata.update(_version_metadata(build))
        env = table_run.lake.env
        if env is not None:  # which version this is: the environment's
            metadata.update(environment=env, lake_branch=env_branch(env))
        checks = list(build.validation.results)
        dataset = table_run.dataset
        if dataset.target is not None:
            if not build.skipped:
                crash_point("lake.published", dataset.name, table_run.partition)
            loaded = self.load_warehouse(table_run, version, build.change)
            metadata.update(loaded)
            checks += reconciled(table_run, loaded)
        return TableOutcome(version, metadata, tuple(checks), build.skipped)

    def ingest(self, table_run: TableRun, metadata: dict[str, Any]) -> BuildOutcome:
        """Bronze: ingest the raw source through its system's throttled store, within the
        system's concurrency; adds what was ingested and the S3 usage to ``metadata``."""
        with _source_store(table_run) as store:
            outcome = ingest(table_run, store)
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
        return outcome.build

    def build(self, table_run: TableRun) -> BuildOutcome:
        """Silver and gold: run the SQL on Spark over the published inputs, check, publish."""
        return build_table(table_run)

    def load_warehouse(
        self, table_run: TableRun, version: Version, change: Change | None = None
    ) -> dict[str, Any]:
        """Load the published version (of the partition) into the warehouse, unless the
        warehouse's load ledger says it already holds that version: a rerun, a backfill over
        loaded days or a run after a crash loads nothing twice, and a new version replaces the
        partition's rows. ``change``: what the build that published it merged, when it did."""
        dataset, target, unit = _load_unit(table_run, version)
        assert table_run.warehouse is not None  # _load_unit says so
        warehouse = table_run.warehouse.connect()
        changed: int | None = None  # the keys loaded, when only the changed ones were
        try:
            report = warehouse.held(target, unit)
            if report is not None:
                table_run.log.info(f"warehouse already holds {unit.describe()}")
            else:
                throttle = table_run.warehouse.throttle(target.system, table_run.control)
                try:
                    changes = load_changes(
                        table_run, warehouse, target, version, unit, throttle, change
                    )
                    if changes is not None:
                        report, changed = changes
                    else:
                        data = table_run.lake.read(table_run.session, [version]).toArrow()
                        report = warehouse.load(target, data, unit, throttle=throttle)
                finally:
                    throttle.close()  # the unspent slice of the shared budget goes back
        finally:
            warehouse.close()
        crash_point("warehouse.loaded", dataset.name, version.partition)
        return _recorded(table_run, unit, report, changed)

    def held_load(self, table_run: TableRun, version: Version) -> dict[str, Any] | None:
        """What ``load_warehouse`` reports when the warehouse's load ledger holds ``version``
        already (recorded as held again), without loading; None when it would load."""
        _dataset, target, unit = _load_unit(table_run, version)
        assert table_run.warehouse is not None  # _load_unit says so
        warehouse = table_run.warehouse.connect()
        try:
            report = warehouse.held(target, unit)
        finally:
            warehouse.close()
        return None if report is None else _recorded(table_run, unit, report, None)


@contextmanager
def _source_store(table_run: TableRun) -> Iterator[ThrottledS3]:
    """The throttled store of the run's source system (its replica's, along a reroute), held
    within the system's concurrency (max_concurrent_jobs within this process); then the unspent
    slice of the shared budget goes back."""
    if table_run.objects is None:
        raise ValueError(f"{table_run.dataset.name}: a bronze run needs object stores")
    replica = table_run.replica
    store = table_run.objects.store(
        replica.system if replica is not None else table_run.dataset.system,
        table_run.control,  # the step's store: not opened again
    )
    try:
        with store.throttle.slot():
            yield store
    finally:
        store.throttle.close()


def _load_unit(table_run: TableRun, version: Version) -> tuple[Dataset, Target, LoadUnit]:
    """The run's table, its warehouse target and the unit a load of ``version`` is."""
    dataset, target = table_run.dataset, table_run.dataset.target
    if target is None or table_run.warehouse is None:
        raise ValueError(f"{dataset.name}: a warehouse load needs a target and a warehouse")
    partitions = dataset.settings.partitions
    unit = LoadUnit(
        dataset.name,
        version.version_id,
        version.rows,
        version.partition,
        partitions.column if partitions is not None and version.partition else None,
        table_run.run_id,
    )
    return dataset, target, unit


def _recorded(
    table_run: TableRun, unit: LoadUnit, report: LoadReport, changed: int | None
) -> dict[str, Any]:
    """A load's (or a held one's) record in the run's state and its metadata; a load that does
    not reconcile raises, unless a reconciliation rule reports it as a check."""
    dataset, target = table_run.dataset, table_run.dataset.target
    assert target is not None  # a load has one
    # After the warehouse's commit, for operators (its ledger stays the authority).
    record = LoadRecord.committed(unit, report, target.warehouse_table)
    table_run.state.record_load(record, held=report.unchanged)
    reconciled_by_check = any(isinstance(r, ReconciliationRule) for r in dataset.rules)
    if not report.reconciled and not reconciled_by_check:
        raise RuntimeError(f"{target.warehouse_table}: {reconciliation_message(report)}")
    if not report.unchanged:
        how = report.mode if changed is None else f"{report.mode} of {changed} changed keys"
        table_run.log.info(
            f"loaded {report.rows_staged} rows of {unit.describe()} into "
            f"{target.warehouse_table} ({how}); {report.rows_in_table} rows in "
            f"{'the partition' if report.partition else 'the table'}"
        )
    return {
        "warehouse_table": target.warehouse_table,
        "warehouse_rows": report.rows_in_table,
        "warehouse_expected_rows": report.expected_rows,
        "warehouse_duplicate_keys": report.duplicate_keys,
        "warehouse_rows_loaded": report.rows_staged,
        "warehouse_loaded": "unchanged"
        if report.unchanged
        else ("changed keys" if changed is not None else "loaded"),
        "warehouse_reconciled": report.reconciled,
    } | ({} if changed is None else {"warehouse_changed_keys": changed})


def reconciled(table_run: TableRun, loaded: Mapping[str, Any]) -> list[CheckResult]:
    """The table's reconciliation checks of a load (or a held one) that ``loaded`` reports."""
    return [
        reconciliation_result(
            rule,
            loaded["warehouse_expected_rows"],
            loaded["warehouse_rows"],
            table_run.label,
            loaded["warehouse_duplicate_keys"],
        )
        for rule in table_run.dataset.rules
        if isinstance(rule, ReconciliationRule)
    ]


def _version_metadata(build: BuildOutcome) -> dict[str, Any]:
    """What a build (or a reuse) adds to the table's materialization."""
    version = build.version
    metadata: dict[str, Any] = {
        "rows": version.rows,
        "dagster/row_count": version.rows,
        "lake_version": version.version_id,
        "skipped": build.skipped,
        "inputs": version.inputs,
    }
    if build.skipped:
        metadata["skip_reason"] = build.reason
    else:  # an incremental kind's: how (in full, and why) and the rows it wrote
        metadata.update({k: build.metadata[k] for k in INCREMENT_KEYS if k in build.metadata})
    return metadata
