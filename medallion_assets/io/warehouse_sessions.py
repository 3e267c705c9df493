"""How each warehouse runs statements and stages rows for the load protocol (``warehouse_load``):
DuckDB (an Arrow scan), PostgreSQL (COPY FROM STDIN) and Redshift (COPY from S3, else batched
INSERTs), with the Arrow preparation they share (merge keys checked, nested values as JSON,
batches paced by the target system's throttle).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, TypeVar

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from medallion_assets.io import warehouse_sql as sql
from medallion_assets.io import warehouse_types
from medallion_assets.io.warehouse_load import Put, Throttle

if TYPE_CHECKING:
    import duckdb
    import psycopg

    PgConnection: TypeAlias = psycopg.Connection[tuple[Any, ...]]

log = logging.getLogger(__name__)

# --- Arrow data preparation -------------------------------------------------------------------


def nested_as_json(data: pa.Table) -> pa.Table:
    """Lists, structs and maps become JSON text, the form they take in a VARCHAR column."""
    for index, field in enumerate(data.schema):
        if warehouse_types.is_nested(field.type):
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


class DbApiCursor(Protocol):
    """The part of a DB-API 2.0 cursor the sessions use."""

    @property
    def description(self) -> Sequence[Sequence[Any]] | None: ...
    def execute(self, query: str, /) -> object: ...
    def fetchall(self) -> Sequence[Sequence[Any]]: ...
    def close(self) -> None: ...


class DbApiConnection(Protocol):
    """The part of a DB-API 2.0 connection the sessions use (psycopg's, redshift_connector's)."""

    autocommit: bool

    def cursor(self) -> DbApiCursor: ...
    def close(self) -> None: ...


Connection = TypeVar("Connection", bound=DbApiConnection)


class DbApiSession(Generic[Connection]):
    """PostgreSQL and Redshift: statements through a DB-API cursor in autocommit mode, so the
    explicit BEGIN/COMMIT of the load protocol are the only transaction boundaries."""

    dialect: sql.Dialect

    def __init__(self, connection: Connection):
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
            names = [column[0] for column in cursor.description or ()]
            return names, [tuple(row) for row in cursor.fetchall()]
        finally:
            cursor.close()

    def close(self) -> None:
        self.connection.close()


class DuckDBSession:
    dialect: sql.Dialect = "duckdb"

    def __init__(self, connection: duckdb.DuckDBPyConnection):
        self.connection = connection

    def execute(self, statement: str) -> None:
        self.connection.execute(statement)

    def fetch(self, statement: str) -> list[tuple[Any, ...]]:
        return list(self.connection.execute(statement).fetchall())

    def read(self, table: str) -> pa.Table:
        query = f"SELECT * FROM {sql.quote_table(table)}"
        rows: pa.Table = self.connection.sql(query).to_arrow_table()
        return rows

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


class PostgresSession(DbApiSession["PgConnection"]):
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


class RedshiftSession(DbApiSession[DbApiConnection]):
    dialect: sql.Dialect = "redshift"

    def __init__(self, connection: DbApiConnection, staging_uri: str, iam_role: str, put: Put):
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
        nested = any(warehouse_types.is_nested(field.type) for field in data.schema)
        uri = f"s3://{bucket}/{folder}"
        self.execute(sql.copy_from_s3(temp, uri, self.iam_role, "parquet", serialize_json=nested))
