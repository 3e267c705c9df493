"""OpenLineage events from every table step (``openlineage/events.py`` names and facets).

A step attempt is one OpenLineage run of the table's job: START when it begins; COMPLETE with
each output's schema, column lineage, data quality assertions, statistics and version, and
the inputs' versions; FAIL when it fails (a retry is a new run); ABORT when the kill switch,
a pre-emption or a termination stops it. Every run names its parent: the Dagster run (job
namespace, the Dagster job's name, the Dagster run id). Off unless OpenLineage is configured
(``io/openlineage.py``); sending never fails the step. The events are built in
``openlineage_facets.py``, imported only when OpenLineage is on.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import dagster as dg

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.io.openlineage import LineageEmitter
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


def _facets() -> ModuleType:
    # The OpenLineage client (about a second to import): loaded only when OpenLineage is on.
    from medallion_assets.adapters import openlineage_facets

    return openlineage_facets


@dataclass
class StepLineage:
    """The OpenLineage run of one step attempt; ``outcomes`` collects what the step built."""

    emitter: LineageEmitter
    context: dg.AssetExecutionContext
    catalog: Catalog
    dataset: Dataset
    run: TableRun
    naming: Any  # openlineage.events.Naming
    run_id: str
    outcomes: list[TableOutcome] = field(default_factory=list)
    ended: bool = False  # an ABORT, FAIL or COMPLETE was sent

    @classmethod
    def of(
        cls,
        context: dg.AssetExecutionContext,
        catalog: Catalog,
        dataset: Dataset,
        run: TableRun,
        warehouse: Any,
    ) -> StepLineage | None:
        """The step's lineage, nothing sent yet; None when OpenLineage is off."""
        sender = emitter()
        if sender is None:
            return None
        naming = _facets().naming_of(run, dataset, warehouse)
        attempt = f"{run.run_id}/{dataset.name}/{run.partition or ''}/{context.retry_number}"
        step_run = str(uuid.uuid5(uuid.NAMESPACE_URL, attempt))
        return cls(sender, context, catalog, dataset, run, naming, step_run)

    def begin(self) -> None:
        """START: the step starts building (after the kill switch has been asked)."""
        self.send("START", inputs=self.inputs({}))

    def complete(self) -> None:
        if self.ended:
            return
        versions: dict[str, str] = {}
        for outcome in self.outcomes:
            versions.update(outcome.version.inputs)
        self.send("COMPLETE", inputs=self.inputs(versions), outputs=self.outputs())

    def fail(self, error: BaseException) -> None:
        self.send("FAIL", error=error)

    def abort(self, why: str) -> None:
        self.send("ABORT", message=why)

    def inputs(self, versions: dict[str, str]) -> list[Any]:
        """What the step reads: what its versions say it read, else the lineage's parents."""
        return list(_facets().input_datasets(self.catalog, self.dataset, self.naming, versions))

    def outputs(self) -> list[Any]:
        facets = _facets()
        return list(
            facets.output_datasets(self.catalog, self.dataset, self.naming, self.run, self.outcomes)
        )

    def send(
        self,
        state: str,
        inputs: list[Any] | tuple[Any, ...] = (),
        outputs: list[Any] | tuple[Any, ...] = (),
        error: BaseException | None = None,
        message: str = "",
    ) -> None:
        """Send the event of ``state`` (START, COMPLETE, FAIL, ABORT)."""
        event = _facets().run_event(self, state, inputs, outputs, error, message)
        self.ended = state != "START"
        self.emitter.emit(event, warn=self.context.log.warning)
