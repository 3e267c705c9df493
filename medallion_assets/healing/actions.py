"""Healing actions: what runs between a classified failure and its retry.

Each action takes a ``HealingContext`` and returns a line for the audit log. Built-ins:

- ``clear_staging``: drop the table's leftover staging branches (nothing in them was
  published, so deleting them is safe);
- ``refresh_connection``: the next attempt opens new connections (the warehouse resource
  connects per load and pools nothing; Spark's session is dropped when it is a Spark Connect
  session, whose server may have restarted);
- ``wait``: pause for the retry policy's delay before the retry's own backoff;
- ``reduce_parallelism``: halve the limits of the table's system (and of its warehouse target's
  system) for an hour, down to an eighth; S3 and warehouse throttles read the cut when a step
  builds them (the cut is kept in the control store, audited);
- ``evolve_schema``: when the error is a ``SchemaDrift`` (raw files with undeclared columns),
  record the new columns as nullable strings of the source in the control store; the retry
  reads them by name. A name Spark or the warehouse cannot take is refused (raw files whose
  columns are garbage are quarantined by ingest before drift is looked for, so this does not
  happen from ingest);
- ``reroute_source``: the source or replica the table read is marked down (a missing upstream
  table counts as down for this decision), and recovery routes every table around what is down
  along its cheapest available path, however many hops away (``recovery.recover``): recorded in
  the control store, where every later step reads it, until the node is marked up again
  (``medallion control up``) or an operator routes the table back. A failure on no source or
  replica walks the table's own routes in cost order instead (``recovery.reroute``);
- a user action by dotted path ``package.module:function``, called with the context.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.operations import RetryPolicy
from medallion_assets.errors import causes
from medallion_assets.healing.diagnosis import Diagnosis, Failure
from medallion_assets.healing.systems import Places
from medallion_assets.lake import Lake
from medallion_assets.recovery.paths import RecoveryGraph
from medallion_assets.recovery.recover import DownNodes, recover
from medallion_assets.recovery.reroute import PRIMARY, find_route, next_route, routes
from medallion_assets.runtime.ingest.schema_drift import SchemaDrift, evolve
from medallion_assets.runtime.reuse import MissingInput
from medallion_assets.runtime.table_run import TableRun

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from medallion_assets.control.store import ControlStore


@dataclass(frozen=True)
class HealingContext:
    """What a healing action gets: the table's run that failed, how the failure was classified,
    the attempt that failed (1 = the first) and the retry policy in force. The run's parts are
    at hand as ``context.lake``, ``context.dataset`` and so on."""

    run: TableRun
    diagnosis: Diagnosis
    failure: Failure
    attempt: int
    policy: RetryPolicy | None
    error: BaseException | None = None
    sleep: Callable[[float], None] = time.sleep

    @property
    def catalog(self) -> Catalog:
        return self.run.catalog

    @property
    def dataset(self) -> Dataset:
        return self.run.dataset

    @property
    def partition(self) -> str | None:
        return self.run.partition

    @property
    def lake(self) -> Lake:
        return self.run.lake

    @property
    def spark(self) -> SparkSession | None:
        """The step's Spark session when it had one open (None when nothing reached Spark)."""
        return self.run.opened_session

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def control(self) -> ControlStore:
        if self.run.control is None:
            raise ValueError(f"{self.dataset.name}: healing needs the control store")
        return self.run.control


def places_of(run: TableRun) -> Places:
    """Where the run's systems keep their data, for telling which one a failure is in."""
    buckets = {s.bucket for s in run.catalog.sources.values()}
    buckets |= {r.bucket for s in run.catalog.sources.values() for r in s.replicas}
    return Places(run.lake.catalog.warehouse, frozenset(buckets))


def clear_staging(context: HealingContext) -> str:
    removed = context.lake.clear_staging(context.dataset.name)
    return f"removed {removed} leftover staging branch(es) of {context.dataset.name}"


def refresh_connection(context: HealingContext) -> str:
    session = context.spark
    if session is not None and type(session).__module__.startswith("pyspark.sql.connect"):
        session.stop()  # the next getOrCreate connects again
        return "stopped the Spark Connect session; the next attempt connects again"
    return "the next attempt opens a new warehouse connection (none is pooled)"


def wait(context: HealingContext) -> str:
    seconds = context.policy.delay_seconds if context.policy else 0.0
    context.sleep(seconds)
    return f"waited {seconds:g} s"


def reduce_parallelism(context: HealingContext) -> str:
    systems = [context.dataset.system]
    if context.dataset.target is not None:
        systems.append(context.dataset.target.system)
    now = time.time()
    reason = f"{context.diagnosis.error_code} in {context.dataset.name}"
    cuts = []
    for system in dict.fromkeys(systems):
        cut = context.control.state.cut_throttle(system, now, reason, context.run_id)
        cuts.append(f"{system} to {cut.factor:g}x")
    return f"limits cut for an hour: {', '.join(cuts)}"


def evolve_schema(context: HealingContext) -> str:
    drift = next((e for e in causes(context.error) if isinstance(e, SchemaDrift)), None)
    if drift is None:
        return "the error is not a schema drift of raw files: nothing evolved"
    added = evolve(context.control.state, drift.source_name, drift.new_columns, context.run_id)
    if not added:
        return f"source {drift.source_name}: the new column(s) were already evolved"
    return f"source {drift.source_name}: added nullable string column(s) {', '.join(added)}"


def reroute_source(context: HealingContext) -> str:
    name = context.dataset.name
    override = context.control.routes().get(name)
    current = override.route if override is not None else PRIMARY
    why = f"{context.diagnosis.error_code} in {name} (healing rule {context.diagnosis.rule})"
    graph = RecoveryGraph.of(context.catalog)
    in_force = current if current in {s.route for s in graph.steps[name]} else PRIMARY
    seen = [n for n in graph.step(name, in_force).needs if n.startswith(("source:", "replica:"))]
    missing = next((e.table for e in causes(context.error) if isinstance(e, MissingInput)), "")
    if not seen and not missing:
        # a failure recovery cannot place on a node: walk the table's routes one by one
        target = next_route(routes(context.catalog, context.dataset), current)
        if target is None:
            return f"no route of {name} is left after {current}: nothing was changed"
        context.control.set_route(name, target.name, why, "healing", context.run_id)
        return f"rerouted {name} from {current} to {target.describe()}"
    down = DownNodes(context.control)
    for node in seen:
        down.mark(node, why, "healing", context.run_id)
    also = {missing: f"{missing} has no published version"} if missing else {}
    plan = recover(
        context.catalog,
        context.control,
        also,
        reason=why,
        changed_by="healing",
        run_id=context.run_id,
    )
    marked = f"marked {', '.join(seen)} down; " if seen else ""
    moved = [r for r in plan.reroutes if r.around]
    if not any(r.table == name for r in moved):
        return f"{marked}no route of {name} is left after {current}: nothing was changed"
    return marked + "; ".join(
        f"rerouted {r.table} from {r.current} to {_route(context, r.table, r.route)}" for r in moved
    )


def _route(context: HealingContext, table: str, name: str) -> str:
    found = find_route(context.catalog, context.catalog.datasets[table], name)
    return found.describe() if found is not None else name


BUILTIN: dict[str, Callable[[HealingContext], str]] = {
    "clear_staging": clear_staging,
    "refresh_connection": refresh_connection,
    "wait": wait,
    "evolve_schema": evolve_schema,
    "reduce_parallelism": reduce_parallelism,
    "reroute_source": reroute_source,
}


def resolve(action: str) -> Callable[[HealingContext], Any]:
    if action in BUILTIN:
        return BUILTIN[action]
    module, _, name = action.partition(":")
    if not name:  # "package.module.function"
        module, _, name = action.rpartition(".")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def run_actions(context: HealingContext) -> list[tuple[str, str]]:
    """Run the diagnosis's actions in order; (action, what it did) for each. An action that
    raises stops the healing: its error is the step's error."""
    done = []
    for action in context.diagnosis.actions:
        outcome = resolve(action)(context)
        done.append((action, str(outcome) if outcome is not None else "done"))
    return done
