"""OpenLineage events from every table step (``openlineage/events.py`` names and facets).

A step attempt is one OpenLineage run of the table's job: START when it begins; COMPLETE with
each output's schema, column lineage, data quality assertions, statistics and version, and
the inputs' versions; FAIL when it fails (a retry is a new run); ABORT when the kill switch,
a pre-emption or a termination stops it. Every run names its parent: the Dagster run (job
namespace, the Dagster job's name, the Dagster run id). Off unless OpenLineage is configured
(``io/openlineage.py``); sending never fails the step.
"""

from __future__ import annotations

import os
import traceback
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version as package_version
from typing import Any

import attr
import dagster as dg
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
from medallion_assets.io.openlineage import LineageEmitter, job_namespace
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

_EMITTERS: dict[tuple[str, ...], LineageEmitter | None] = {}


def emitter() -> LineageEmitter | None:
    """The emitter for the process's OpenLineage configuration (its ``OPENLINEAGE*``
    variables and working directory), built once per configuration: the client keeps its HTTP
    session between steps. None when OpenLineage is off."""
    key = (
        os.getcwd(),
        *sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith("OPENLINEAGE")),
    )
    if key not in _EMITTERS:
        _EMITTERS[key] = LineageEmitter.from_env()
    return _EMITTERS[key]


@dataclass
class StepLineage:
    """The OpenLineage run of one step attempt; ``outcomes`` collects what the step built."""

    emitter: LineageEmitter
    context: dg.AssetExecutionContext
    catalog: Catalog
    dataset: Dataset
    run: TableRun
    naming: Naming
    run_id: str
    outcomes: list[TableOutcome] = field(default_factory=list)
    ended: bool = False  # an ABORT, FAIL or COMPLETE was sent

    @classmethod
    def start(
        cls,
        context: dg.AssetExecutionContext,
        catalog: Catalog,
        dataset: Dataset,
        run: TableRun,
        warehouse: Any,
    ) -> StepLineage | None:
        """Send START and return the step's lineage; None when OpenLineage is off.
        ``warehouse``: the run's ``WarehouseResource``."""
        sender = emitter()
        if sender is None:
            return None
        namespace, prefix = warehouse_naming(warehouse.url()) if dataset.target else (None, "")
        naming = Naming(job_namespace(), run.lake.catalog.warehouse, namespace, prefix)
        attempt = f"{run.run_id}/{dataset.name}/{run.partition or ''}/{context.retry_number}"
        step_run = str(uuid.uuid5(uuid.NAMESPACE_URL, attempt))
        lineage = cls(sender, context, catalog, dataset, run, naming, step_run)
        lineage.send(RunState.START, inputs=lineage.inputs({}))
        return lineage

    def complete(self) -> None:
        if self.ended:
            return
        versions: dict[str, str] = {}
        for outcome in self.outcomes:
            versions.update(outcome.version.inputs)
        self.send(RunState.COMPLETE, inputs=self.inputs(versions), outputs=self.outputs())

    def fail(self, error: BaseException) -> None:
        self.send(RunState.FAIL, error=error)

    def abort(self, why: str) -> None:
        self.send(RunState.ABORT, message=why)

    # --- the event's parts ------------------------------------------------------------------

    def inputs(self, versions: dict[str, str]) -> list[InputDataset]:
        """What the step reads: what its versions say it read, else the lineage's parents."""
        nodes = sorted(versions) or input_nodes(self.catalog, self.dataset.name)
        found = []
        for node in nodes:
            try:
                name = dataset_name(self.catalog, node, self.naming)
            except (KeyError, ValueError):
                continue  # not a table or source (e.g. an object-set key): no name to give
            facets: dict[str, Any] = {}
            if node in versions:
                facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(
                    datasetVersion=versions[node]
                )
            found.append(InputDataset(name.namespace, name.name, facets=facets))
        return found

    def outputs(self) -> list[Any]:
        if not self.outcomes:
            return []
        lake = self.run.lake
        footprint = lake.footprint([o.version for o in self.outcomes])
        checks = [c for o in self.outcomes for c in o.checks]
        facets: dict[str, Any] = {
            "version": dataset_version_dataset.DatasetVersionDatasetFacet(
                datasetVersion=",".join(o.version.version_id for o in self.outcomes)
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
            rowCount=sum(o.version.rows for o in self.outcomes),
            size=footprint.bytes,
            fileCount=footprint.files,
        )
        return outputs_of(
            self.catalog,
            self.dataset,
            self.naming,
            table_schema(footprint.columns),
            facets,
            {"outputStatistics": statistics},
        )

    def send(
        self,
        state: RunState,
        inputs: Sequence[InputDataset] = (),
        outputs: Sequence[Any] = (),
        error: BaseException | None = None,
        message: str = "",
    ) -> None:
        context = self.context
        facets: dict[str, Any] = {
            "parent": parent_run.ParentRunFacet(
                run=parent_run.Run(runId=context.run.run_id),
                job=parent_run.Job(namespace=self.naming.job_namespace, name=context.job_name),
            ),
            "processing_engine": processing_engine_run.ProcessingEngineRunFacet(
                version=package_version("pyspark"),
                name="spark",
                openlineageAdapterVersion=package_version("openlineage-python"),
            ),
            "medallion": MedallionRunFacet(
                dagster_run_id=context.run.run_id,
                partition=self.run.partition,
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
        event = RunEvent(
            eventType=state,
            eventTime=datetime.now(UTC).isoformat(),
            run=Run(runId=self.run_id, facets=facets),
            job=table_job(self.dataset, self.naming),
            inputs=list(inputs),
            outputs=list(outputs),
            producer=PRODUCER,
        )
        self.ended = state != RunState.START
        self.emitter.emit(event, warn=context.log.warning)


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
        return f"{PRODUCER}/blob/main/medallion_assets/adapters/openlineage_events.py"
