"""A table's step reported to Dagster: each day of it run through the ``TableRunner``, then one
``MaterializeResult`` (data version: the published lake version; metadata: what the run did and
the published columns) with an ``AssetCheckResult`` per rule; a blocking failure reports the
checks, then fails the step."""

from collections.abc import Iterator
from typing import Any

import dagster as dg  # no "from __future__ import annotations": Dagster reads the hints

from medallion_assets.adapters.build_lock import partitions_of
from medallion_assets.adapters.checks import (
    blocked,
    check_results,
    raise_on_blocking,
    selected_checks,
)
from medallion_assets.adapters.translator import table_schema
from medallion_assets.catalog.describe import column_descriptions
from medallion_assets.checks.results import ChecksFailed
from medallion_assets.runtime.table_run import TableRun
from medallion_assets.runtime.table_runner import TableOutcome, TableRunner, combined_metadata

StepEvent = dg.MaterializeResult[Any] | dg.AssetCheckResult | dg.AssetObservation


def published_schema(run: TableRun) -> dg.TableSchema:
    """The columns of the table as published, with their types and descriptions."""
    name = run.dataset.name
    return table_schema(run.lake.schema(name), column_descriptions(run.catalog, name))


def materialize_dataset(
    context: dg.AssetExecutionContext,
    runner: TableRunner,
    run: TableRun,
    outcomes: list[TableOutcome] | None = None,
) -> Iterator[StepEvent]:
    """Run the table for each partition of the step through ``runner``, then report; what each
    partition's run did goes into ``outcomes``."""
    dataset = run.dataset
    outcomes = [] if outcomes is None else outcomes
    for partition in partitions_of(context, dataset):
        try:
            outcomes.append(runner.run(run.for_partition(partition)))
        except ChecksFailed as failed:
            done = [c for o in outcomes for c in o.checks]
            yield from check_results(
                context.asset_key, [*done, *failed.validation.results], selected_checks(context)
            )
            yield kept_current(context.asset_key, failed)
            raise blocked(failed) from failed
    checks = [c for o in outcomes for c in o.checks]
    results = list(check_results(context.asset_key, checks, selected_checks(context)))
    # The published table's own columns and types: the UI shows them on the asset.
    schema = {"dagster/column_schema": published_schema(run)}
    if len(outcomes) == 1:
        (outcome,) = outcomes
        yield dg.MaterializeResult(
            data_version=dg.DataVersion(outcome.version.version_id),
            metadata={**outcome.metadata, **schema},  # mappings and lists show as JSON
            check_results=results,
        )
    else:
        metadata = {**combined_metadata(outcomes), **schema}
        yield dg.MaterializeResult(metadata=metadata, check_results=results)
    raise_on_blocking(dataset, checks)


def kept_current(key: dg.AssetKey, failed: ChecksFailed) -> dg.AssetObservation:
    """What the asset's page shows of a blocked build: the version that stays current (none
    when the table was never published) and where the rejected output is kept."""
    return dg.AssetObservation(
        asset_key=key,
        partition=failed.partition,
        description=str(failed).splitlines()[0],
        metadata={
            "lake_version": failed.current or "none published",
            "blocked": True,
            "failed_checks": [r.name for r in failed.validation.blocking_failures],
            "rejected_staging": failed.staging,
        },
    )
