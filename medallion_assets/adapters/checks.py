"""Check results as Dagster sees them: one ``AssetCheckResult`` per rule, the step failure a
blocking check causes, and the checks-only execution ("Execute checks" in the UI)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import dagster as dg

from medallion_assets.catalog import Dataset
from medallion_assets.checks.results import CheckResult, ChecksFailed
from medallion_assets.checks.validation import data_rules, validate_frame
from medallion_assets.runtime.table_run import TableRun


def selected_checks(context: dg.AssetExecutionContext) -> set[str]:
    return {key.name for key in context.selected_asset_check_keys}


def check_current_version(
    context: dg.AssetExecutionContext, run: TableRun
) -> Iterator[dg.AssetCheckResult]:
    """Only checks were selected: evaluate them on the published version, without building
    anything."""

    dataset, lake, partition = run.dataset, run.lake, run.partition
    frame = lake.read_current(run.session, dataset.name, [partition] if partition else None)
    if frame is None:
        raise dg.Failure(f"{dataset.name} has no published version to check: materialize it")
    chosen = [r for r in data_rules(dataset) if r.label() in selected_checks(context)]
    checks = run.check_context()
    assert checks is not None  # a checks-only run checks
    results = validate_frame(frame, checks, chosen).results
    yield from check_results(context.asset_key, list(results), selected_checks(context))


def blocked(failed: ChecksFailed) -> dg.Failure:
    """The step failure of a table its blocking checks kept from publishing."""
    return dg.Failure(
        description=str(failed),
        metadata={
            "failed_checks": [r.name for r in failed.validation.blocking_failures],
            "rejected_staging": str(failed.staging),
            "blocked_since": failed.since or time.time(),
        },
        allow_retries=False,  # the same data fails the same check: retrying cannot help
    )


def raise_on_blocking(dataset: Dataset, checks: list[CheckResult]) -> None:
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


def check_results(
    key: dg.AssetKey, results: list[CheckResult], only: set[str] | None = None
) -> Iterator[dg.AssetCheckResult]:
    """One ``AssetCheckResult`` per check of the asset ``key`` (those in ``only``, when
    given); results of several partitions are combined."""
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
        reused = {str(r) for p in parts if (r := p.details.get("reused_from")) is not None}
        if reused:
            metadata["reused_from"] = ", ".join(sorted(reused))
        yield dg.AssetCheckResult(
            asset_key=key,
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
