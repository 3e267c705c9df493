"""What a ``medallion run`` need not start: the tables with nothing new, found before any
Dagster run.

A table's step with nothing new only keeps its current version and reports again the check
results recorded for it; a run used to start every table's step (three Dagster runs for the
demo) even so: some 500 events written one by one for a run with nothing new, and as many
around the one table an object landed for. Before launching them, the headless run asks
``TableRunner.unchanged`` of every table (each day of the daily ones), with nothing opened and
nothing written. A table (day) is *kept* when it has nothing to do and reads nothing that
will be run; only the others get steps. For the kept ones the checks that time alone changes
(freshness, judged again from the newest value recorded, and the warehouse's reconciliation)
are recorded as runless check evaluations, which the UI shows against the asset's latest
materialization, and the summary says they are unchanged. When nothing is left to run, no
Dagster run is launched at all.

Every table runs as before when the run asks for a full refresh, or a node is down or switched
off, a table is rerouted or below the profile in force: those runs say so in their steps.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import dagster as dg

from medallion_assets.adapters.assets import ENV_TAG, FULL_REFRESH_TAG
from medallion_assets.adapters.checks import check_results
from medallion_assets.adapters.resources import LakeResource, S3Resource, WarehouseResource
from medallion_assets.adapters.run_summary import CheckOutcome, TableResult
from medallion_assets.adapters.translator import table_key
from medallion_assets.catalog import Catalog
from medallion_assets.checks.results import CheckResult
from medallion_assets.control_plane import ControlPlane
from medallion_assets.recovery.recover import down_now
from medallion_assets.recovery.reroute import PRIMARY
from medallion_assets.runtime.run_profile import below_profile
from medallion_assets.runtime.table_run import TableRun, step_partitions
from medallion_assets.runtime.table_runner import TableOutcome, TableRunner

Key = tuple[str, str | None]  # (table, its day or None)


@dataclass(frozen=True)
class RunPlan:
    """The tables (days) a run keeps as they are, and those it starts steps for."""

    kept: tuple[tuple[TableRun, TableOutcome], ...]
    to_run: frozenset[Key]

    def tables(self, tables: list[str], day: str | None = None) -> list[str]:
        """Those of ``tables`` the run starts a step for (on ``day``, for daily ones)."""
        return [t for t in tables if (t, day) in self.to_run]

    def report(
        self,
        catalog: Catalog,
        instance: dg.DagsterInstance,
        plane: ControlPlane,
        log: Callable[[str], None],
    ) -> list[TableResult]:
        """Record the kept tables' time-bound checks in ``instance`` and say what was kept;
        their rows of the run's summary."""
        results, again = [], 0
        by_table: dict[str, list[tuple[TableRun, TableOutcome]]] = {}
        for run, outcome in self.kept:
            by_table.setdefault(run.dataset.name, []).append((run, outcome))
        for table, mine in by_table.items():
            judged = [c for _r, o in mine for c in o.checks if "reused_from" not in c.details]
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
            results += [_result(run, outcome) for run, outcome in mine]
        if not results:
            return results
        if self.to_run:
            message = (
                f"{len(results)} table(s) and day(s) unchanged, no step started for them: "
                f"nothing new for them or for what they read; {again} time-bound check(s) "
                "judged again"
            )
        else:
            message = (
                f"nothing new: {len(results)} table(s) and day(s) unchanged since the last run "
                f"(code, inputs and warehouse loads); no step ran, {again} time-bound "
                "check(s) judged again"
            )
        plane.store().record("outcome", f"project:{catalog.project.name}", message)
        log(message)
        return results


def plan_run(
    catalog: Catalog,
    defs: dg.Definitions,
    plane: ControlPlane,
    days: list[str],
    tags: Mapping[str, str],
    runner: TableRunner | None = None,
) -> RunPlan | None:
    """The plan of a run over ``days`` with ``tags``, or None when every table runs."""
    if not _plain(catalog, plane, tags):
        return None
    resources = defs.resources or {}
    lake, s3, warehouse = resources.get("lake"), resources.get("s3"), resources.get("warehouse")
    if not (
        isinstance(lake, LakeResource)
        and isinstance(s3, S3Resource)
        and isinstance(warehouse, WarehouseResource)
    ):
        return None
    runner = runner or TableRunner()
    found: dict[Key, tuple[TableRun, TableOutcome | None]] = {}
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
                control=plane.store(),
            )
            try:
                outcome = runner.unchanged(run)
            except Exception:  # the table's step meets it again, heals it or says why
                outcome = None
            if outcome is not None and any(c.blocking_failure for c in outcome.checks):
                outcome = None  # its step fails as it should
            found[(dataset.name, partition)] = (run, outcome)
    to_run = _with_readers(catalog, found, {k for k, (_r, o) in found.items() if o is None})
    kept = tuple((r, o) for k, (r, o) in found.items() if k not in to_run and o is not None)
    return RunPlan(kept, frozenset(to_run))


def _plain(catalog: Catalog, plane: ControlPlane, tags: Mapping[str, str]) -> bool:
    """Whether every table runs its plain way: no full refresh, nothing down or switched off,
    no reroute, no table below the profile in force."""
    if tags.get(FULL_REFRESH_TAG, "").strip() or tags.get(ENV_TAG):  # each step decides
        return False
    store, flags = plane.store(), plane.flags()
    tables = list(catalog.datasets)
    if plane.disabled(catalog, tables, flags=flags, by_membership=True):
        return False
    if down_now(catalog, store, flags):
        return False
    if any(override.route != PRIMARY for override in store.routes().values()):
        return False
    return all(below_profile(catalog, t, None, store, tags) is None for t in tables)


def _with_readers(catalog: Catalog, found: Mapping[Key, object], changed: set[Key]) -> set[Key]:
    """``changed`` and every table (day) that reads one of them, directly or through others:
    the same day of a daily table read by a daily one, every day (or the whole table)
    otherwise."""
    readers: dict[str, list[str]] = {}
    for dataset in catalog.datasets.values():
        for upstream in dataset.upstream:
            readers.setdefault(upstream, []).append(dataset.name)
    keys_of: dict[str, list[Key]] = {}
    for key in found:
        keys_of.setdefault(key[0], []).append(key)
    daily = {n for n, d in catalog.datasets.items() if d.settings.partitions is not None}
    reached, queue = set(changed), list(changed)
    while queue:
        table, day = queue.pop()
        for reader in readers.get(table, ()):
            same_day = reader in daily and table in daily
            for key in [(reader, day)] if same_day else keys_of.get(reader, []):
                if key in found and key not in reached:
                    reached.add(key)
                    queue.append(key)
    return reached


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
