"""The load protocol every warehouse follows, written once over a small ``LoadSession``:

1. create the schema and table if missing (column types from the Arrow schema);
2. stage the rows into a session-private temp table, in throttled batches;
3. in ONE transaction apply replace (DELETE all + INSERT), append (INSERT) or merge (DELETE the
   staged keys + INSERT); on any error roll back, so the previous content stays;
4. after COMMIT count the table and reconcile against the rows the lake says it should hold.

Each warehouse supplies a session: how to run a statement and how rows reach the staging table.
DuckDB reads registered Arrow batches, PostgreSQL takes CSV through ``COPY ... FROM STDIN``,
Redshift ``COPY``s Parquet files written to an S3 staging prefix. The statements themselves come
from ``warehouse_sql.py``; the public warehouse objects are in ``warehouse.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from medallion_assets.runtime import warehouse_sql as sql

if TYPE_CHECKING:
    from medallion_assets.catalog.models import Target

log = logging.getLogger(__name__)

BATCH_ROWS = 50_000
Put = Callable[[str, str, bytes], object]  # (bucket, key, body), e.g. ObjectStore.put


class Throttle(Protocol):
    """Blocks to keep a rate; ``SystemThrottle`` from ``runtime/throttle.py`` is one."""

    def rows(self, n: int) -> object: ...
    def bytes(self, n: int) -> object: ...


@dataclass(frozen=True)
class LoadReport:
    """What one load did; ``reconciled`` is False when the table does not hold ``expected_rows``.

    ``expected_rows``: replace and merge -> the lake's row count (``lake_rows``, default the rows
    loaded by a replace); append -> rows before + rows staged.
    """

    table: str
    mode: str
    rows_staged: int
    rows_in_table: int
    expected_rows: int
    reconciled: bool
    seconds: float


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


def run_load(
    session: LoadSession,
    target: Target,
    data: pa.Table,
    *,
    throttle: Throttle | None = None,
    lake_rows: int | None = None,
    batch_rows: int = BATCH_ROWS,
) -> LoadReport:
    """Load ``data`` into ``target.warehouse_table``; see the module docstring for the steps.

    ``lake_rows`` is the lake table's total row count for replace and merge (a merge usually
    stages only changed rows); it is ignored for append.
    """
    started = time.monotonic()
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
    table, mode = target.warehouse_table, target.mode
    # Everything about the data is checked before the warehouse is touched.
    columns = sql.arrow_columns(data.schema, session.dialect)
    names = [name for name, _ in columns]
    if mode == "merge":
        check_merge_keys(data, target.keys)
    _ensure_table(session, target, columns)

    temp = sql.temp_table_name(table, uuid.uuid4().hex[:8])
    session.execute(sql.create_temp_like(temp, table, names, session.dialect, target.dist_key))
    try:
        session.stage(temp, data, throttle, batch_rows)
        before, matched = _apply(session, target, temp, names, lake_rows)
    finally:
        _drop_quietly(session, temp)

    in_table = _scalar(session, sql.count_rows(table))
    if mode == "append":
        expected = before + len(data)
    elif lake_rows is not None:
        expected = lake_rows
    else:
        expected = len(data) if mode == "replace" else before - matched + len(data)
    report = LoadReport(
        table, mode, len(data), in_table, expected, in_table == expected, time.monotonic() - started
    )
    _log(report)
    return report


def _ensure_table(session: LoadSession, target: Target, columns: list[tuple[str, str]]) -> None:
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
    if create_schema and schema_query and _scalar(session, schema_query) == 0:
        session.execute(create_schema)
    session.execute(
        sql.create_table(table, columns, session.dialect, target.dist_key, target.sort_keys)
    )


def _apply(
    session: LoadSession, target: Target, temp: str, names: list[str], lake_rows: int | None
) -> tuple[int, int]:
    """The one transaction; returns (rows before, target rows a merge replaces)."""
    table, mode, keys = target.warehouse_table, target.mode, target.keys
    statements = sql.apply_statements(mode, table, temp, names, keys)
    session.execute(sql.BEGIN)
    try:
        # Counts are taken only where the expected row count needs them: COUNT(*) scans.
        needs_before = mode == "append" or (mode == "merge" and lake_rows is None)
        before = _scalar(session, sql.count_rows(table)) if needs_before else 0
        matched = 0
        if mode == "merge" and lake_rows is None:
            matched = _scalar(session, sql.count_matched(table, temp, keys))
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


def _drop_quietly(session: LoadSession, temp: str) -> None:
    # The temp table dies with the session anyway; a failed drop must not hide a load error.
    with contextlib.suppress(Exception):
        session.execute(sql.drop_table(temp))


def _scalar(session: LoadSession, statement: str) -> int:
    rows = session.fetch(statement)
    return int(rows[0][0])


def _log(report: LoadReport) -> None:
    message = "%s %s: staged %d, table has %d, expected %d (%.2fs)"
    args = (report.mode, report.table, report.rows_staged, report.rows_in_table)
    if report.reconciled:
        log.info(message, *args, report.expected_rows, report.seconds)
    else:
        log.warning("NOT RECONCILED " + message, *args, report.expected_rows, report.seconds)


# --- Arrow data preparation -------------------------------------------------------------------


def check_merge_keys(data: pa.Table, keys: tuple[str, ...] | list[str]) -> None:
    """Merge keys must be present, non-null and unique in the data, or a merge is not idempotent
    (NULL never matches in the DELETE, and duplicate keys multiply on every reload)."""
    if not keys:
        raise ValueError("mode 'merge' needs keys: the columns that identify a row")
    for key in keys:
        if key not in data.column_names:
            raise ValueError(f"merge key {key!r} is not a column of the data")
        nulls = data.column(key).null_count
        if nulls:
            raise ValueError(f"merge key {key!r} has {nulls} null value(s); keys must be non-null")
    if len(data) == 0:
        return
    distinct = data.select(list(keys)).group_by(list(keys)).aggregate([]).num_rows
    if distinct != len(data):
        raise ValueError(
            f"merge keys ({', '.join(keys)}) are not unique in the data: {len(data) - distinct} "
            "row(s) repeat a key; deduplicate in the gold SQL"
        )


def nested_as_json(data: pa.Table) -> pa.Table:
    """Lists, structs and maps become JSON text, the form they take in a VARCHAR column."""
    for index, field in enumerate(data.schema):
        if sql.is_nested(field.type):
            values = [
                None if value is None else json.dumps(value, default=str, ensure_ascii=False)
                for value in data.column(index).to_pylist()
            ]
            data = data.set_column(index, field.name, pa.array(values, pa.string()))
    return data


def batches(data: pa.Table, batch_rows: int) -> Iterator[pa.Table]:
    """Zero-copy slices of at most ``batch_rows`` rows; none for an empty table."""
    for offset in range(0, len(data), batch_rows):
        yield data.slice(offset, batch_rows)


def pace(throttle: Throttle | None, rows: int, nbytes: int) -> None:
    """Take the tokens for one batch before sending it."""
    if throttle is not None:
        throttle.rows(rows)
        throttle.bytes(nbytes)


# --- sessions: how each warehouse runs statements and stages rows ------------------------------


class DbApiSession:
    """PostgreSQL and Redshift: statements through a DB-API cursor in autocommit mode, so the
    explicit BEGIN/COMMIT of the load protocol are the only transaction boundaries."""

    dialect: sql.Dialect

    def __init__(self, connection: Any):
        self.connection = connection
        self.connection.autocommit = True

    def execute(self, statement: str) -> None:
        cursor = self.connection.cursor()
        try:
            cursor.execute(statement)
        finally:
            cursor.close()

    def fetch(self, statement: str) -> list[tuple[Any, ...]]:
        return self._fetch(statement)[1]

    def read(self, table: str) -> pa.Table:
        names, rows = self._fetch(f"SELECT * FROM {sql.quote_table(table)}")
        return pa.table({name: [row[i] for row in rows] for i, name in enumerate(names)})

    def _fetch(self, statement: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        cursor = self.connection.cursor()
        try:
            cursor.execute(statement)
            names = [column[0] for column in cursor.description]
            return names, [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def close(self) -> None:
        self.connection.close()


class DuckDBSession:
    dialect: sql.Dialect = "duckdb"

    def __init__(self, connection: Any):
        self.connection = connection

    def execute(self, statement: str) -> None:
        self.connection.execute(statement)

    def fetch(self, statement: str) -> list[tuple[Any, ...]]:
        return list(self.connection.execute(statement).fetchall())

    def read(self, table: str) -> pa.Table:
        return self.connection.sql(f"SELECT * FROM {sql.quote_table(table)}").to_arrow_table()

    def stage(self, temp: str, data: pa.Table, throttle: Throttle | None, batch_rows: int) -> None:
        view = f"{temp}_arrow"
        insert = sql.insert_select(temp, view, data.column_names)
        for batch in batches(nested_as_json(data), batch_rows):
            pace(throttle, len(batch), batch.nbytes)
            self.connection.register(view, batch)
            try:
                self.connection.execute(insert)
            finally:
                self.connection.unregister(view)

    def close(self) -> None:
        self.connection.close()


class PostgresSession(DbApiSession):
    dialect: sql.Dialect = "postgres"

    def stage(self, temp: str, data: pa.Table, throttle: Throttle | None, batch_rows: int) -> None:
        copy = sql.copy_from_stdin(temp, data.column_names)
        options = pa_csv.WriteOptions(include_header=False)
        for batch in batches(nested_as_json(data), batch_rows):
            # Arrow writes the CSV in C; NULL is an unquoted empty field and strings are always
            # quoted, which is exactly how PostgreSQL's CSV COPY tells NULL from ''.
            buffer = io.BytesIO()
            pa_csv.write_csv(batch, buffer, options)
            payload = buffer.getvalue()
            pace(throttle, len(batch), len(payload))
            with self.connection.cursor() as cursor, cursor.copy(copy) as writer:
                writer.write(payload)


class RedshiftSession(DbApiSession):
    dialect: sql.Dialect = "redshift"

    def __init__(self, connection: Any, staging_uri: str, iam_role: str, put: Put):
        super().__init__(connection)
        self.staging_uri, self.iam_role, self.put = staging_uri, iam_role, put

    def stage(self, temp: str, data: pa.Table, throttle: Throttle | None, batch_rows: int) -> None:
        if len(data) == 0:
            return  # COPY from a prefix with no files is an error; the temp table stays empty
        bucket, _, prefix = self.staging_uri[len("s3://") :].partition("/")
        # The temp name carries a per-load token, so concurrent loads never share a prefix.
        folder = f"{prefix.strip('/')}/{temp}/".lstrip("/")
        for number, batch in enumerate(batches(data, batch_rows)):
            buffer = io.BytesIO()
            # Redshift stores microseconds; nanosecond Parquet timestamps would be rejected.
            pq.write_table(batch, buffer, coerce_timestamps="us", allow_truncated_timestamps=True)
            payload = buffer.getvalue()
            pace(throttle, len(batch), len(payload))
            self.put(bucket, f"{folder}part-{number:05d}.parquet", payload)
        nested = any(sql.is_nested(field.type) for field in data.schema)
        uri = f"s3://{bucket}/{folder}"
        self.execute(sql.copy_from_s3(temp, uri, self.iam_role, "parquet", serialize_json=nested))
