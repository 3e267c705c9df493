"""A ``medallion run`` with nothing new: found before any Dagster run, and no run launched.

A run with nothing new used to start every table's step (three Dagster runs for the demo)
only for each step to keep its current version and report again the check results recorded
for it: some 500 events written one by one, for nothing. Before launching them, the headless
run asks ``TableRunner.unchanged`` of every table (each day of the daily ones), with nothing
opened and nothing written. When every table is a fixed point, no Dagster run is launched:
the checks that time alone changes (freshness, judged again from the newest value recorded,
and the warehouse's reconciliation) are recorded as runless check evaluations, which the UI
shows against the asset's latest materialization, and the summary says every table is
unchanged. Anything else (a table to build or load, a node down or switched off, a reroute,
a profile that leaves tables out, a full refresh, a check with no recorded result or failing
to block, a doubt about a version, any error) and the runs go as usual, and say why.
"""

from collections.abc import Callable, Mapping

import dagster as dg

from medallion_assets.adapters.assets import FULL_REFRESH_TAG
from medallion_assets.adapters.checks import check_results
from medallion_assets.adapters.resources import LakeResource, S3Resource, WarehouseResource
from medallion_assets.adapters.run_summary import CheckOutcome, RunSummary, TableResult
from medallion_assets.adapters.step_order import below_profile
from medallion_assets.adapters.translator import table_key
from medallion_assets.catalog import Catalog
from medallion_assets.checks.results import CheckResult
from medallion_assets.control_plane import ControlPlane
from medallion_assets.recovery.recover import down_now
from medallion_assets.recovery.reroute import PRIMARY
from medallion_assets.runtime.table_run import TableRun, step_partitions
from medallion_assets.runtime.table_runner import TableOutcome, TableRunner


def nothing_new(
    catalog: Catalog,
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    plane: ControlPlane,
    days: list[str],
    tags: Mapping[str, str],
    log: Callable[[str], None],
    runner: TableRunner | None = None,
) -> RunSummary | None:
    """The summary of a run with nothing new for any table (its time-bound checks recorded in
    ``instance``), or None when the run has something to do and its Dagster runs must go.
    ``days``: the days of the daily tables the run would build; ``tags``: the runs' tags."""
    outcomes = _unchanged(catalog, defs, plane, days, tags, runner or TableRunner())
    if outcomes is None:
        return None
    summary = RunSummary()
    again = 0
    for table in catalog.datasets:
        mine = [(run, outcome) for run, outcome in outcomes if run.dataset.name == table]
        judged = [c for _run, o in mine for c in o.checks if "reused_from" not in c.details]
        key = table_key(table)
        for result in check_results(key, judged):
            instance.report_runless_asset_event(
                dg.AssetCheckEvaluation(
                    asset_key=key,
                    check_name=str(result.check_name),
                    passed=result.passed,
                    metadata=result.metadata,
                    severity=result.severity,
                    description=result.description,
                )
            )
            again += 1
        summary.results += [_result(run, outcome) for run, outcome in mine]
    message = (
        f"nothing new: {len(summary.results)} table(s) and day(s) unchanged since the last run "
        f"(code, inputs and warehouse loads); no step ran, {again} time-bound check(s) "
        "judged again"
    )
    plane.store().record("outcome", f"project:{catalog.project.name}", message)
    log(message)
    return summary


def _unchanged(
    catalog: Catalog,
    defs: dg.Definitions,
    plane: ControlPlane,
    days: list[str],
    tags: Mapping[str, str],
    runner: TableRunner,
) -> list[tuple[TableRun, TableOutcome]] | None:
    """Every table's (and day's) outcome with nothing new, or None at the first that has
    something to do or cannot be decided here."""
    if tags.get(FULL_REFRESH_TAG, "").strip():
        return None
    store = plane.store()
    flags = plane.flags()
    tables = list(catalog.datasets)
    if plane.disabled(catalog, tables, flags=flags, by_membership=True):
        return None
    if down_now(catalog, store, flags) or any(
        override.route != PRIMARY for override in store.routes().values()
    ):
        return None
    if any(below_profile(catalog, t, None, store, tags) is not None for t in tables):
        return None
    resources = defs.resources or {}
    lake, s3, warehouse = resources.get("lake"), resources.get("s3"), resources.get("warehouse")
    if not (
        isinstance(lake, LakeResource)
        and isinstance(s3, S3Resource)
        and isinstance(warehouse, WarehouseResource)
    ):
        return None
    outcomes = []
    for dataset in catalog.datasets.values():
        daily = dataset.settings.partitions
        partitions = (
            [p for day in days for p in step_partitions(daily, day, None)] if daily else [None]
        )
        for partition in partitions:
            run = TableRun(
                catalog=catalog,
                dataset=dataset,
                lake=lake.lake,
                partition=partition,
                objects=s3,
                warehouse=warehouse,
                control=store,
            )
            try:
                outcome = runner.unchanged(run)
            except Exception:  # the table's step meets it again, heals it or says why
                return None
            if outcome is None or any(c.blocking_failure for c in outcome.checks):
                return None
            outcomes.append((run, outcome))
    return outcomes


def _result(run: TableRun, outcome: TableOutcome) -> TableResult:
    """The summary row of a table (day) kept as it was."""
    metadata = outcome.metadata
    return TableResult(
        run.dataset.name,
        run.partition,
        "unchanged",
        current_rows=outcome.version.rows,
        warehouse_rows=metadata.get("warehouse_rows"),
        warehouse_loaded=metadata.get("warehouse_loaded"),
        checks=[_check(c) for c in outcome.checks],
        message=str(metadata.get("skip_reason", "")),
    )


def _check(result: CheckResult) -> CheckOutcome:
    sample = result.samples[0] if result.samples else None
    return CheckOutcome(
        result.name, result.severity, result.passed, result.failing_rows, result.message, sample
    )
