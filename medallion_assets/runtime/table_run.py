"""One table's run: everything the execution of one table (or one day of it) needs, in one
frozen object, instead of ten arguments handed from function to function.

The Dagster step builds a ``TableRun`` from its context and resources (``adapters/assets.py``)
and hands it to ``TableRunner.run`` (``runtime/table_runner.py``); tests and notebooks build
one directly:

    run = TableRun(spark=spark, lake=lake, catalog=catalog, dataset=catalog.datasets["gold.x"])
    build_table(run)

``objects`` and ``warehouse`` are what the run reaches beyond Spark and the lake (the
resources satisfy both protocols); ``control`` is the control store healing and audit write to.
A step's Spark session is opened when the run first needs it (``SessionOnDemand``): a table
whose code and inputs are unchanged is reused without it, so a run with nothing new starts no
JVM.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.models import Partitioning
from medallion_assets.catalog.sources import Replica
from medallion_assets.checks.results import CheckContext
from medallion_assets.lake import Lake
from medallion_assets.recovery.reroute import PRIMARY, Route, along

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from medallion_assets.control.check_results import CheckLedger
    from medallion_assets.control.state import RuntimeState
    from medallion_assets.control.store import ControlStore
    from medallion_assets.io.warehouse import Warehouse
    from medallion_assets.throttles.throttle import SystemThrottle, ThrottledS3


def _quiet(_message: str) -> None:
    return None


@dataclass(frozen=True)
class RunLog:
    """Where a run's progress lines go: ``info``, and ``warning`` (``info`` when not given)."""

    info: Callable[[str], None] = _quiet
    warning: Callable[[str], None] | None = None

    def warn(self, message: str) -> None:
        (self.warning or self.info)(message)


class ObjectStores(Protocol):
    """The throttled object store of a source system (``adapters.resources.S3Resource``)."""

    def store(self, system: str, control: ControlStore | None = None) -> ThrottledS3: ...


class WarehouseAccess(Protocol):
    """Connections to the warehouse and its systems' throttles (``WarehouseResource``)."""

    def connect(self) -> Warehouse: ...

    def throttle(self, system: str, control: ControlStore | None = None) -> SystemThrottle: ...


class NoSparkSession(RuntimeError):
    """A run built without a Spark session (the relaunch sensor's healing) reached Spark."""


class CheckInputsNotPublished(RuntimeError):
    """A table whose checks read tables its run also builds, one of which did not publish in
    the run: its output is not published (its checks would judge it against the version the
    run meant to replace), and it stays as it was."""

    def __init__(self, table: str, missing: Sequence[str], published: bool = True):
        self.table, self.missing = table, tuple(missing)
        kept = "keeps its current version" if published else "has no version yet"
        super().__init__(
            f"not run: {', '.join(self.missing)}, which the checks of {table} read, did not "
            f"publish in this run; {table} {kept}"
        )


class SessionOnDemand:
    """A Spark session opened by ``open`` the first time it is asked for, then kept."""

    def __init__(self, open: Callable[[], SparkSession]):
        self._open = open
        self._lock = threading.Lock()
        self._session: SparkSession | None = None

    def get(self) -> SparkSession:
        with self._lock:
            if self._session is None:
                self._session = self._open()
            return self._session

    @property
    def opened(self) -> SparkSession | None:
        """The session when it was opened, else None (nothing reached Spark)."""
        return self._session


@dataclass(frozen=True, kw_only=True)
class TableRun:
    """One table's run: which table and day, on which Spark and lake, along which route."""

    catalog: Catalog
    dataset: Dataset
    lake: Lake
    spark: SparkSession | SessionOnDemand | None = None
    partition: str | None = None
    run_id: str = ""
    route: Route | None = None  # None or the primary: the table's own path
    log: RunLog = field(default_factory=RunLog)
    checks: bool = True  # run the dataset's checks on the staged output
    objects: ObjectStores | None = None  # bronze: the raw sources' object stores
    warehouse: WarehouseAccess | None = None  # gold tables with a target
    control: ControlStore | None = None  # healing (reroute) and audit
    rebuild: bool = False  # build even when code and inputs are unchanged (a damaged version)
    # Waits until the tables the checks read are as the run leaves them (a step started beside
    # their builds: ``adapters/check_inputs.py``); the ones the run did not publish.
    check_inputs: Callable[[], Sequence[str]] | None = None

    @property
    def session(self) -> SparkSession:
        if self.spark is None:
            raise NoSparkSession(f"{self.dataset.name}: this run has no Spark session")
        if isinstance(self.spark, SessionOnDemand):
            return self.spark.get()
        return self.spark

    @property
    def opened_session(self) -> SparkSession | None:
        """The Spark session when the run has one open, else None (none was needed yet)."""
        return self.spark.opened if isinstance(self.spark, SessionOnDemand) else self.spark

    @property
    def state(self) -> RuntimeState:
        """The runtime state in the control store: manifests, evolved columns, loads."""
        if self.control is None:
            raise ValueError(f"{self.dataset.name}: this run has no control store (control=)")
        return self.control.state

    @property
    def check_ledger(self) -> CheckLedger | None:
        """Where the check results of this table's outputs are recorded (none without a
        control store: then a skipped build checks again and a rejection is not remembered)."""
        return self.control.checks if self.control is not None else None

    @property
    def label(self) -> str:
        """``table`` or ``table[day]``, as messages name the run."""
        return f"{self.dataset.name}[{self.partition}]" if self.partition else self.dataset.name

    @property
    def rerouted(self) -> bool:
        return self.route is not None and self.route.name != PRIMARY

    @property
    def replica(self) -> Replica | None:
        return self.route.replica if self.route is not None else None

    def along_route(self) -> TableRun:
        """The run with the dataset as built along its route (an alternate producer's SQL)."""
        if self.route is None or not self.rerouted:
            return self
        return replace(self, dataset=along(self.dataset, self.route))

    def for_partition(self, partition: str | None) -> TableRun:
        return replace(self, partition=partition)

    def without_checks(self) -> TableRun:
        return replace(self, checks=False)

    def check_context(
        self,
        quarantine: DataFrame | None = None,
        records_read: int | None = None,
        quarantined: int | None = None,
    ) -> CheckContext | None:
        """What the checks may read, or None when the run does not check (``quarantined``:
        the ``quarantine``'s records, when the caller counted them)."""
        if not self.checks:
            return None
        return CheckContext(
            lambda: self.session,  # opened by the first check that reads
            self.lake,
            self.catalog,
            self.dataset,
            self.partition,
            quarantine,
            records_read,
            quarantined,
        )


def step_partitions(
    partitioning: Partitioning | None,
    partition_key: str | None,
    partition_keys: Sequence[str] | None,
) -> list[str | None]:
    """The partitions a step of a table partitioned so builds, in order: its one key, each key
    of its range (a backfill run as one step), or None for an unpartitioned table. Days before
    the table's own ``start`` are left out (the project's partitions begin at its earliest
    start), so a step may have nothing to build.

    >>> from datetime import date
    >>> daily = Partitioning(type="daily", column="day", start=date(2026, 1, 2))
    >>> step_partitions(daily, None, ["2026-01-01", "2026-01-02"])
    ['2026-01-02']
    >>> step_partitions(daily, "2026-01-01", None)
    []
    >>> step_partitions(None, "2026-01-01", None)  # a whole table in a daily run
    [None]
    """
    keys = [partition_key] if partition_key is not None else list(partition_keys or ())
    if partitioning is None or not keys:
        return [None]
    first = partitioning.start.isoformat()
    return [key for key in keys if key >= first]
