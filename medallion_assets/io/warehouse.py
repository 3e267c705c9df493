"""Warehouses that gold tables are loaded into: DuckDB (embedded default), PostgreSQL, Redshift.

All three follow the same load protocol (``warehouse_load.run_load``) and run the same statement
text (``warehouse_sql``); they differ in how they connect and how rows reach the staging table
(the sessions in ``warehouse_load``)::

    with warehouse_from_url("postgresql://loader@db:5432/analytics") as warehouse:
        report = warehouse.held(target, unit) or warehouse.load(target, table, unit)

Connection strings hold passwords: they are masked (``runtime.credentials``) in every repr and
error message, and a raw password with ``/``, ``#``, ``?`` or ``@`` is encoded before the driver
reads the URL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, unquote, urlsplit

import pyarrow as pa

from medallion_assets.credentials import encoded_url, mask_credentials, url_secrets
from medallion_assets.io import warehouse_sql as sql
from medallion_assets.io.warehouse_changes import loaded_version, run_changes_load
from medallion_assets.io.warehouse_load import (
    BATCH_ROWS,
    LoadReport,
    LoadSession,
    LoadUnit,
    Put,
    Throttle,
    held,
    run_load,
)
from medallion_assets.io.warehouse_sessions import (
    DbApiConnection,
    DuckDBSession,
    PostgresSession,
    RedshiftSession,
)

if TYPE_CHECKING:
    from medallion_assets.catalog.models import Target

__all__ = [
    "DuckDBWarehouse", "LoadReport", "LoadUnit", "PostgresWarehouse", "RedshiftWarehouse",
    "Throttle", "Warehouse", "warehouse_from_url",
]  # fmt: skip


@runtime_checkable
class Warehouse(Protocol):
    """A load target for gold tables. ``load`` follows ``warehouse_load.run_load``: ``unit`` is
    the lake version (of a partition) being loaded; ``held`` reports an earlier load of it;
    ``load_changes`` loads only the keys changed since the version it holds
    (``warehouse_changes``)."""

    kind: str  # "duckdb", "postgres" or "redshift": the dialect of its statements

    def load(
        self,
        target: Target,
        data: pa.Table,
        unit: LoadUnit | None = None,
        throttle: Throttle | None = None,
    ) -> LoadReport: ...
    def held(self, target: Target, unit: LoadUnit) -> LoadReport | None: ...
    def loaded_version(self, target: Target) -> str | None: ...
    def load_changes(
        self,
        target: Target,
        rows: pa.Table,
        keys: pa.Table,
        unit: LoadUnit,
        base: str,
        throttle: Throttle | None = None,
    ) -> LoadReport: ...
    def row_count(self, warehouse_table: str) -> int: ...
    def read(self, warehouse_table: str) -> pa.Table: ...
    def reach(self) -> None: ...  # connect now: ConnectionError naming it if it cannot
    def close(self) -> None: ...


class _SqlWarehouse:
    """The shared half: load, count and close over a lazily opened ``LoadSession``."""

    kind = ""

    def __init__(self, batch_rows: int = BATCH_ROWS):
        self.batch_rows = batch_rows
        self._session: LoadSession | None = None

    def _open(self) -> LoadSession:
        raise NotImplementedError

    def session(self) -> LoadSession:
        if self._session is None:
            self._session = self._open()
        return self._session

    def reach(self) -> None:
        self.session()

    def load(
        self,
        target: Target,
        data: pa.Table,
        unit: LoadUnit | None = None,
        throttle: Throttle | None = None,
    ) -> LoadReport:
        return run_load(
            self.session(), target, data, unit, throttle=throttle, batch_rows=self.batch_rows
        )

    def held(self, target: Target, unit: LoadUnit) -> LoadReport | None:
        return held(self.session(), target, unit)

    def loaded_version(self, target: Target) -> str | None:
        """The one lake version the warehouse holds of the (unpartitioned) table, else None."""
        return loaded_version(self.session(), target, None)

    def load_changes(
        self,
        target: Target,
        rows: pa.Table,
        keys: pa.Table,
        unit: LoadUnit,
        base: str,
        throttle: Throttle | None = None,
    ) -> LoadReport:
        """``warehouse_changes.run_changes_load``: only the keys changed since ``base``."""
        return run_changes_load(
            self.session(),
            target,
            rows,
            keys,
            unit,
            base,
            throttle=throttle,
            batch_rows=self.batch_rows,
        )

    def row_count(self, warehouse_table: str) -> int:
        return int(self.session().fetch(sql.count_rows(warehouse_table))[0][0])

    def read(self, warehouse_table: str) -> pa.Table:
        return self.session().read(warehouse_table)

    def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def __enter__(self) -> _SqlWarehouse:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


# --- DuckDB -----------------------------------------------------------------------------------


class DuckDBWarehouse(_SqlWarehouse):
    """A DuckDB file (the embedded default); ``":memory:"`` for a throwaway one."""

    kind = "duckdb"

    def __init__(self, path: str | Path, *, batch_rows: int = BATCH_ROWS):
        super().__init__(batch_rows)
        self.path = str(path)

    def _open(self) -> LoadSession:
        # the driver of the database in use, loaded only when it is used
        import duckdb

        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        return DuckDBSession(duckdb.connect(self.path))

    def __repr__(self) -> str:
        return f"DuckDBWarehouse({self.path!r})"


# --- PostgreSQL -------------------------------------------------------------------------------


class PostgresWarehouse(_SqlWarehouse):
    """PostgreSQL through psycopg 3; ``dsn`` is a URL or a libpq key=value string."""

    kind = "postgres"

    def __init__(self, dsn: str, *, batch_rows: int = BATCH_ROWS):
        super().__init__(batch_rows)
        self._dsn = dsn

    def _open(self) -> LoadSession:
        # the driver of the database in use, loaded only when it is used
        import psycopg

        try:
            connection = psycopg.connect(encoded_url(self._dsn), autocommit=True)
        except psycopg.Error as error:
            secrets = url_secrets(self._dsn)
            raise ConnectionError(
                f"cannot connect to {mask_credentials(self._dsn, secrets)}: "
                f"{mask_credentials(str(error), secrets)}"
            ) from None
        return PostgresSession(connection)

    def __repr__(self) -> str:
        return f"PostgresWarehouse({mask_credentials(self._dsn)!r})"


# --- Redshift ---------------------------------------------------------------------------------


class RedshiftWarehouse(_SqlWarehouse):
    """Redshift through ``redshift_connector`` (imported only when a connection is opened).

    ``params`` are ``redshift_connector.connect`` keyword arguments. Rows travel as Parquet files
    written with ``put(bucket, key, bytes)`` (e.g. ``ObjectStore.put``) under ``s3_staging_uri``
    and are COPYed with ``iam_role``. Staged files are not deleted: give the staging prefix an
    S3 lifecycle rule. ``connection`` injects an open DB-API connection instead of ``params``.
    """

    kind = "redshift"

    def __init__(
        self,
        params: Mapping[str, Any],
        *,
        s3_staging_uri: str,
        iam_role: str,
        put: Put | None = None,
        connection: DbApiConnection | None = None,
        batch_rows: int = BATCH_ROWS,
    ):
        super().__init__(batch_rows)
        # Validate now, so a bad URI or role fails at configuration time, not mid-load.
        sql.copy_from_s3("t", s3_staging_uri.rstrip("/") + "/", iam_role)
        self._params = dict(params)
        self.s3_staging_uri, self.iam_role = s3_staging_uri.rstrip("/"), iam_role
        self._put = put
        self._connection = connection

    def _open(self) -> LoadSession:
        connection = self._connection
        if connection is None:
            try:
                # the driver of the database in use, loaded only when it is used
                import redshift_connector
            except ImportError:
                raise ImportError(
                    "RedshiftWarehouse needs the redshift_connector package: "
                    "pip install redshift_connector"
                ) from None
            try:
                connection = redshift_connector.connect(**self._params)
            except Exception as error:
                password = str(self._params.get("password") or "")
                raise ConnectionError(
                    f"cannot connect to Redshift at {self._params.get('host', '?')}: "
                    f"{mask_credentials(str(error), {password})}"
                ) from None
        put = self._put or _boto3_put()
        return RedshiftSession(connection, self.s3_staging_uri, self.iam_role, put)

    def __repr__(self) -> str:
        params = {k: "***" if _SECRET.search(k) else v for k, v in self._params.items()}
        return f"RedshiftWarehouse({params!r}, s3_staging_uri={self.s3_staging_uri!r})"


_SECRET = re.compile(r"password|secret|token|key", re.IGNORECASE)


def _boto3_put() -> Put:
    # boto3: loaded only when an S3 client is made
    import boto3

    client = boto3.client("s3")

    def put(bucket: str, key: str, body: bytes) -> object:
        return client.put_object(Bucket=bucket, Key=key, Body=body)

    return put


# --- URLs -------------------------------------------------------------------------------------

_REDSHIFT_QUERY = {"s3_staging", "iam_role"}
_URL_HELP = (
    "use duckdb:///path/to/file.duckdb, postgresql://user@host:port/db or "
    "redshift://user:password@host:5439/db?s3_staging=s3://bucket/prefix&iam_role=arn:..."
)


def warehouse_from_url(url: str, *, put: Put | None = None) -> Warehouse:
    """A warehouse for a URL. No connection is opened until the first statement.

    >>> warehouse_from_url("duckdb:///tmp/warehouse.duckdb")
    DuckDBWarehouse('/tmp/warehouse.duckdb')
    """
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise ValueError(f"{mask_credentials(url)!r} is not a warehouse URL; {_URL_HELP}")
    if scheme == "duckdb":
        return DuckDBWarehouse(rest or ":memory:")
    if scheme in ("postgresql", "postgres"):
        return PostgresWarehouse(url)
    if scheme == "redshift":
        return _redshift_from_url(url, put)
    raise ValueError(f"unsupported warehouse URL scheme {scheme!r}; {_URL_HELP}")


def _redshift_from_url(url: str, put: Put | None) -> RedshiftWarehouse:
    parts = urlsplit(encoded_url(url))
    query = dict(parse_qsl(parts.query))
    unknown = sorted(set(query) - _REDSHIFT_QUERY)
    missing = sorted(_REDSHIFT_QUERY - set(query))
    if unknown or missing or not parts.hostname:
        raise ValueError(
            f"{mask_credentials(url)!r}: a Redshift URL needs a host and the query parameters "
            f"s3_staging and iam_role (unknown: {', '.join(unknown) or 'none'}, "
            f"missing: {', '.join(missing) or 'none'}); {_URL_HELP}"
        )
    params: dict[str, Any] = {
        "host": parts.hostname,
        "port": parts.port or 5439,
        "database": unquote(parts.path.lstrip("/")) or "dev",
    }
    if parts.username:
        params["user"] = unquote(parts.username)
    if parts.password:
        params["password"] = unquote(parts.password)
    return RedshiftWarehouse(
        params, s3_staging_uri=query["s3_staging"], iam_role=query["iam_role"], put=put
    )
