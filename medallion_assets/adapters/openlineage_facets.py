"""The OpenLineage events of a table step, built with the OpenLineage client: its datasets,
facets and run events (``openlineage_events.StepLineage`` sends them). The client takes about a
second to import, so this module is imported only when OpenLineage is on."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib.metadata import version as package_version
from typing import Any, Protocol

import attr
from openlineage.client.event_v2 import InputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    RunFacet,
    data_quality_assertions_dataset,
    dataset_version_dataset,
    error_message_run,
    output_statistics_output_dataset,
    parent_run,
    processing_engine_run,
    schema_dataset,
)

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.io.openlineage import job_namespace
from medallion_assets.openlineage.events import (
    PRODUCER,
    Naming,
    dataset_name,
    input_nodes,
    outputs_of,
    table_job,
    warehouse_naming,
)
from medallion_assets.runtime.table_run import TableRun
from medallion_assets.runtime.table_runner import TableOutcome


class StepLineage(Protocol):
    """What an event says of its step (``openlineage_events.StepLineage``): the step's Dagster
    context, its table and run, how its datasets are named and its OpenLineage run id."""

    context: Any  # dg.AssetExecutionContext
    dataset: Dataset
    run: TableRun
    naming: Naming
    run_id: str


def naming_of(run: TableRun, dataset: Dataset, warehouse: Any) -> Naming:
    """How the step's datasets and job are named (``warehouse``: the ``WarehouseResource``)."""
    namespace, prefix = warehouse_naming(warehouse.url()) if dataset.target else (None, "")
    return Naming(job_namespace(), run.lake.catalog.warehouse, namespace, prefix)


def input_datasets(
    catalog: Catalog, dataset: Dataset, naming: Naming, versions: dict[str, str]
) -> list[InputDataset]:
    """What the step reads: what its versions say it read, else the lineage's parents."""
    nodes = sorted(versions) or input_nodes(catalog, dataset.name)
    found = []
    for node in nodes:
        try:
            name = dataset_name(catalog, node, naming)
        except (KeyError, ValueError):
            continue  # not a table or source (e.g. an object-set key): no name to give
        facets: dict[str, Any] = {}
        if node in versions:
            facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
                datasetVersion=versions[node]
            )
        found.append(InputDataset(name.namespace, name.name, facets=facets))
    return found


def output_datasets(
    catalog: Catalog, dataset: Dataset, naming: Naming, run: TableRun, outcomes: list[TableOutcome]
) -> list[Any]:
    """What the step published: each output's schema, version, assertions and statistics."""
    if not outcomes:
        return []
    footprint = run.lake.footprint([o.version for o in outcomes])
    checks = [c for o in outcomes for c in o.checks]
    facets: dict[str, Any] = {
        "version": dataset_version_dataset.DatasetVersionDatasetFacet(
            datasetVersion=",".join(o.version.version_id for o in outcomes)
        )
    }
    if checks:
        facets["dataQualityAssertions"] = (
            data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(
                assertions=[
                    data_quality_assertions_dataset.Assertion(
                        assertion=c.kind,
                        success=c.passed,
                        severity=c.severity,
                        name=c.name,
                        description=c.message[:1000],
                        actual=str(c.failing_rows),
                        expected="0",
                    )
                    for c in checks
                ]
            )
        )
    statistics = output_statistics_output_dataset.OutputStatisticsOutputDatasetFacet(
        rowCount=sum(o.version.rows for o in outcomes),
        size=footprint.bytes,
        fileCount=footprint.files,
    )
    return outputs_of(
        catalog,
        dataset,
        naming,
        table_schema(footprint.columns),
        facets,
        {"outputStatistics": statistics},
    )


def run_event(
    step: StepLineage,
    state: str,
    inputs: Sequence[InputDataset] = (),
    outputs: Sequence[Any] = (),
    error: BaseException | None = None,
    message: str = "",
) -> RunEvent:
    """The step's event of ``state`` (START, COMPLETE, FAIL, ABORT), naming its parent run."""
    context = step.context
    facets: dict[str, Any] = {
        "parent": parent_run.ParentRunFacet(
            run=parent_run.Run(runId=context.run.run_id),
            job=parent_run.Job(namespace=step.naming.job_namespace, name=context.job_name),
        ),
        "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
            version=package_version("pyspark"),
            name="spark",
            openlineageAdapterVersion=package_version("openlineage-python"),
        ),
        "medallion": MedallionRunFacet(
            dagster_run_id=context.run.run_id,
            partition=step.run.partition,
            attempt=context.retry_number + 1,
            message=message or None,
        ),
    }
    if error is not None:
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=f"{type(error).__name__}: {str(error)[:2000]}",
            programmingLanguage="PYTHON",
            stackTrace="".join(traceback.format_exception(error))[-8000:],
        )
    return RunEvent(
        eventType=RunState[state],
        eventTime=datetime.now(UTC).isoformat(),
        run=Run(runId=step.run_id, facets=facets),
        job=table_job(step.dataset, step.naming),
        inputs=list(inputs),
        outputs=list(outputs),
        producer=PRODUCER,
    )


def table_schema(columns: Sequence[tuple[str, str]]) -> schema_dataset.SchemaDatasetFacet | None:
    """The published table's columns and types (Iceberg's), as OpenLineage's schema facet."""
    if not columns:
        return None
    return schema_dataset.SchemaDatasetFacet(
        fields=[
            schema_dataset.SchemaDatasetFacetFields(name=name, type=kind, ordinal_position=i)
            for i, (name, kind) in enumerate(columns, start=1)
        ]
    )


@attr.define(kw_only=True)
class MedallionRunFacet(RunFacet):
    """medallion_assets' own run facet: the Dagster run, the partition, the attempt, and why
    the run was aborted."""

    dagster_run_id: str
    partition: str | None = None
    attempt: int = 1
    message: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return f"{PRODUCER}/blob/main/medallion_assets/adapters/openlineage_facets.py"
