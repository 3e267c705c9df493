"""The load protocol every warehouse follows, written once over a small ``LoadSession``:

1. create the schema, the table and its load ledger if missing (types from the Arrow schema);
2. if the ledger says the warehouse already holds this lake version of this partition, stop:
   nothing is loaded twice, whatever reran (a rerun, a backfill, a run after a crash);
3. stage the rows into a session-private temp table, in throttled batches;
4. in ONE transaction: lock the table, check the ledger again (a concurrent load may have won),
   delete the partition's rows (or, without partitions, all rows for replace), delete the staged
   keys for merge, insert, and record the load in the ledger; on any error roll back, so the
   previous content stays and the ledger still tells the truth;
5. after COMMIT count the rows in scope, and the repeated keys when the target declares keys,
   and reconcile against the rows the lake says the scope must hold.

Each warehouse supplies a session: how to run a statement and how rows reach the staging table.
DuckDB reads registered Arrow batches, PostgreSQL takes CSV through ``COPY ... FROM STDIN``,
Redshift ``COPY``s Parquet files written to an S3 staging prefix. The statements themselves come
from ``warehouse_sql.py``; the public warehouse objects are in ``warehouse.py``.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.compute

from medallion_assets.errors import PermanentError
from medallion_assets.io import warehouse_sql as sql
from medallion_assets.io import warehouse_types

if TYPE_CHECKING:
    from medallion_assets.catalog.models import Target

log = logging.getLogger(__name__)

BATCH_ROWS = 50_000
Put = Callable[[str, str, bytes], object]  # (bucket, key, body), e.g. ObjectStore.put


class Throttle(Protocol):
    """Blocks to keep a rate; ``SystemThrottle`` from ``throttles/throttle.py`` is one."""

    def rows(self, n: int) -> object: ...
    def bytes(self, n: int) -> object: ...


@dataclass(frozen=True)
class LoadUnit:
    """What one load writes: one lake version of a table, or of one of its daily partitions.

    ``partition_column`` is the warehouse column holding the partition's day; a load of the
    partition replaces exactly the rows whose day it is.
    """

    lake_table: str
    lake_version: str
    # The lake version's row count: what the scope must hold after the load. None for rows that
    # do not come from a lake version (``adhoc``): then a merge expects before - matched + staged.
    rows: int | None
    partition: str | None = None
    partition_column: str | None = None
    run_id: str = ""

    def scope(self) -> str | None:
        if self.partition is None:
            return None
        if self.partition_column is None:
            raise ValueError(f"{self.lake_table}[{self.partition}]: no partition column")
        return sql.partition_scope(self.partition_column, self.partition)

    def describe(self) -> str:
        where = f"[{self.partition}]" if self.partition else ""
        return f"{self.lake_table}{where} version {self.lake_version}"

    @classmethod
    def adhoc(cls, target: Target) -> LoadUnit:
        """Rows handed over directly (tests, notebooks): a version of their own, loaded once."""
        return cls(target.table, f"adhoc-{uuid.uuid4().hex}", None)


@dataclass(frozen=True)
class LoadReport:
    """What one load did; ``reconciled`` is False when the scope (the partition, else the table)
    does not hold ``expected_rows`` or, for a target with keys, holds a key more than once.

    ``expected_rows``: the lake version's rows for a partition, a replace or a merge; for an
    append without partitions, the rows before plus the rows staged. ``unchanged``: the ledger
    already held this version, nothing was loaded.
    """

    table: str
    mode: str
    rows_staged: int
    rows_in_table: int  # in scope: the partition's rows for a partitioned load
    expected_rows: int
    reconciled: bool
    seconds: float
    partition: str | None = None
    duplicate_keys: int = 0
    unchanged: bool = False


class LoadSession(Protocol):
    """One open warehouse connection, as the load procedure needs it."""

    dialect: sql.Dialect

    def execute(self, statement: str) -> None: ...
    def fetch(self, statement: str) -> list[tuple[Any, ...]]: ...
    def stage(
        self, temp: str, data: pa.Table, throttle: Throttle | None, batch_rows: int
    ) -> None: ...
    def read(self, table: str) -> pa.Table: ...
    def close(self) -> None: ...


def held(session: LoadSession, target: Target, unit: LoadUnit) -> LoadReport | None:
    """The report of an earlier load when the warehouse already holds ``unit`` (its ledger says
    so), else None. Cheap: no data is read from the lake for a load that would do nothing."""
    started = time.monotonic()
    table = target.warehouse_table
    if not holds(session, table, unit):
        return None
    return reconcile(session, target, unit, 0, started, unchanged=True)


def run_load(
    session: LoadSession,
    target: Target,
    data: pa.Table,
    unit: LoadUnit | None = None,
    *,
    throttle: Throttle | None = None,
    batch_rows: int = BATCH_ROWS,
) -> LoadReport:
    """Load ``data`` (the lake version ``unit``, else ``LoadUnit.adhoc``) into
    ``target.warehouse_table``; see the module docstring for the steps."""
    started = time.monotonic()
    unit = unit or LoadUnit.adhoc(target)
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
    table, mode = target.warehouse_table, target.mode
    # Everything about the data is checked before the warehouse is touched.
    columns = warehouse_types.arrow_columns(data.schema, session.dialect)
    names = [name for name, _ in columns]
    if unit.partition_column is not None and unit.partition_column not in names:
        raise ValueError(
            f"{unit.describe()}: the partition column {unit.partition_column!r} is not a column "
            f"of the data ({', '.join(names)}); select it in the gold SQL"
        )
    if mode == "merge":
        check_merge_keys(data, target.keys)
    scope = unit.scope()
    ensure_table(session, target, columns)
    create_table_if_missing(session, sql.ledger_table(table), sql.create_ledger(table))
    report = held(session, target, unit)
    if report is not None:
        return report

    temp = sql.temp_table_name(table, uuid.uuid4().hex[:8])
    session.execute(sql.create_temp_like(temp, table, names, session.dialect, target.dist_key))
    try:
        session.stage(temp, data, throttle, batch_rows)
        counts = _apply(session, target, unit, temp, data)
    finally:
        drop_quietly(session, temp)
    if counts is None:  # a concurrent load recorded this version while we staged
        return reconcile(session, target, unit, 0, started, unchanged=True)
    before, matched = counts
    if mode == "append" and scope is None:
        expected = before + len(data)
    elif unit.rows is not None:
        expected = unit.rows
    else:
        expected = len(data) if mode == "replace" else before - matched + len(data)
    return reconcile(session, target, unit, len(data), started, expected=expected)


def holds(session: LoadSession, table: str, unit: LoadUnit) -> bool:
    return unit.lake_version in held_versions(session, table, unit.partition)


def held_versions(session: LoadSession, table: str, partition: str | None) -> set[str]:
    """The lake versions the ledger says ``table`` (its ``partition``) holds; none without one."""
    if not session.fetch(sql.table_columns(sql.ledger_table(table))):
        return set()
    return {row[0] for row in session.fetch(sql.ledger_versions(table, partition))}


def reconcile(
    session: LoadSession,
    target: Target,
    unit: LoadUnit,
    staged: int,
    started: float,
    expected: int | None = None,
    unchanged: bool = False,
) -> LoadReport:
    table, scope = target.warehouse_table, unit.scope()
    in_scope = scalar(session, sql.count_rows(table, scope))
    if expected is None:
        # An earlier load: the lake version's rows, or (append history, or rows not from the lake)
        # what the table holds, leaving only repeated keys to find.
        history = target.mode == "append" and scope is None
        expected = in_scope if history or unit.rows is None else unit.rows
    repeated = (
        scalar(session, sql.count_duplicate_keys(table, target.keys, scope)) if (target.keys) else 0
    )
    report = LoadReport(
        table,
        target.mode,
        staged,
        in_scope,
        expected,
        in_scope == expected and repeated == 0,
        time.monotonic() - started,
        unit.partition,
        repeated,
        unchanged,
    )
    _log(report)
    return report


def ensure_table(session: LoadSession, target: Target, columns: list[tuple[str, str]]) -> None:
    table = target.warehouse_table
    existing = [row[0] for row in session.fetch(sql.table_columns(table))]
    if existing:
        missing = [name for name, _ in columns if name not in existing]
        if missing:
            raise ValueError(
                f"warehouse table {table} has no column(s) {', '.join(missing)} that the data "
                f"has; add them (ALTER TABLE {table} ADD COLUMN ...) or drop the table so the "
                "next load recreates it"
            )
        return
    create_schema, schema_query = sql.create_schema(table), sql.schema_exists(table)
    if create_schema and schema_query and scalar(session, schema_query) == 0:
        _create(session, create_schema, lambda: scalar(session, schema_query) > 0)
    create_table_if_missing(
        session,
        table,
        sql.create_table(table, columns, session.dialect, target.dist_key, target.sort_keys),
    )


def create_table_if_missing(session: LoadSession, table: str, statement: str) -> None:
    _create(session, statement, lambda: bool(session.fetch(sql.table_columns(table))))


def _create(session: LoadSession, statement: str, exists: Callable[[], bool]) -> None:
    """Run a CREATE ... IF NOT EXISTS. Two loads creating the same object at once can still
    collide on PostgreSQL's catalog (a unique violation in pg_type); the loser goes on when the
    object is there now."""
    try:
        session.execute(statement)
    except Exception:
        if not exists():
            raise


def _apply(
    session: LoadSession, target: Target, unit: LoadUnit, temp: str, staged: pa.Table
) -> tuple[int, int] | None:
    """The one transaction; returns (the table's rows before it, target rows a merge replaces),
    counted only where the expected row count needs them, or None when the ledger already holds
    the version once the lock is ours."""
    table, mode = target.warehouse_table, target.mode
    scope = unit.scope()
    statements = sql.load_statements(mode, table, temp, staged.column_names, target.keys, scope)
    appended = mode == "append" and scope is None
    statements += sql.ledger_entry(
        table,
        unit.partition,
        unit.lake_table,
        unit.lake_version,
        len(staged),
        datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        unit.run_id,
        keep_others=appended,
    )
    session.execute(sql.BEGIN)
    try:
        lock = sql.lock_table(table, session.dialect)
        if lock:
            session.execute(lock)
        if holds(session, table, unit):
            session.execute(sql.ROLLBACK)
            return None
        # COUNT(*) scans: taken only where the expected row count needs them.
        unknown_merge = mode == "merge" and scope is None and unit.rows is None
        before = scalar(session, sql.count_rows(table)) if appended or unknown_merge else 0
        matched = (
            scalar(session, sql.count_matched(table, temp, target.keys)) if (unknown_merge) else 0
        )
        for statement in statements:
            session.execute(statement)
        session.execute(sql.COMMIT)
    except BaseException:
        # A broken connection cannot roll back, but the server discards its transaction anyway;
        # the original error is the one worth raising.
        with contextlib.suppress(Exception):
            session.execute(sql.ROLLBACK)
        raise
    return before, matched


def drop_quietly(session: LoadSession, temp: str) -> None:
    # The temp table dies with the session anyway; a failed drop must not hide a load error.
    with contextlib.suppress(Exception):
        session.execute(sql.drop_table(temp))


def scalar(session: LoadSession, statement: str) -> int:
    rows = session.fetch(statement)
    return int(rows[0][0])


def _log(report: LoadReport) -> None:
    where = f"[{report.partition}]" if report.partition else ""
    message = "%s %s%s: staged %d, %d rows in scope, expected %d, %d repeated keys (%.2fs)"
    args = (report.mode, report.table, where, report.rows_staged, report.rows_in_table)
    rest = (report.expected_rows, report.duplicate_keys, report.seconds)
    if report.reconciled:
        log.info(message, *args, *rest)
    else:
        log.warning("NOT RECONCILED " + message, *args, *rest)


class MergeKeyError(PermanentError, ValueError):
    """The data cannot be merged on its keys: the same data fails the same way, so it fails at
    once instead of being retried."""

    error_code = "MERGE_KEY_INVALID"
    fix = "make the gold SQL give every row a non-null key that no other row has"


def check_merge_keys(data: pa.Table, keys: tuple[str, ...] | list[str]) -> None:
    """Merge keys must be present, non-null and unique in the data, or a merge is not idempotent
    (NULL never matches in the DELETE, and duplicate keys multiply on every reload). A data
    error raises ``MergeKeyError`` naming the keys (and a few repeated values)."""
    if not keys:
        raise ValueError("mode 'merge' needs keys: the columns that identify a row")
    for key in keys:
        if key not in data.column_names:
            raise MergeKeyError(f"merge key {key!r} is not a column of the data")
        nulls = data.column(key).null_count
        if nulls:
            raise MergeKeyError(
                f"merge key {key!r} is NULL in {nulls} of {len(data)} row(s); keys must be "
                "non-null: filter or fill them in the gold SQL"
            )
    if len(data) == 0:
        return
    counted = data.select(list(keys)).group_by(list(keys)).aggregate([([], "count_all")])
    repeated = counted.filter(pa.compute.greater(counted.column("count_all"), pa.scalar(1)))
    if repeated.num_rows:
        sample = ", ".join(
            "(" + ", ".join(f"{k}={row[k]!r}" for k in keys) + f") x{row['count_all']}"
            for row in repeated.slice(0, 3).to_pylist()
        )
        raise MergeKeyError(
            f"merge keys ({', '.join(keys)}) are not unique in the data: "
            f"{len(data) - counted.num_rows} row(s) repeat a key, e.g. {sample}; deduplicate "
            "in the gold SQL"
        )
