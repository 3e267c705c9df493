"""Connections to the control store: SQLAlchemy engines for SQLite and PostgreSQL, one short
transaction per operation, and the store's failures turned into one clear ``ControlStoreError``.

SQLite (the embedded default) runs in WAL mode with a busy timeout and begins every transaction
IMMEDIATE, taking the write lock up front: a writer waits for another instead of failing, and a
migration holds the lock while it reads and moves the version. ``postgresql://`` URLs use the
psycopg 3 driver (``postgresql+psycopg``). No pool: each transaction opens a connection and
closes it, so a run process forked or spawned by Dagster never shares one.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import create_engine, event, exc
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from medallion_assets.credentials import encoded_url, mask_credentials, url_secrets
from medallion_assets.errors import ResourceError

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine, Insert, Table

    from medallion_assets.control.records import AuditEntry


class StoreWrites(Protocol):
    """What the runtime state and the check ledger write through (``store.ControlStore``):
    short transactions, the dialect's upserts and audit entries in the caller's transaction."""

    def transaction(self) -> AbstractContextManager[Connection]: ...

    def upsert(self, table: Table, values: Mapping[str, Any]) -> Insert: ...

    def upsert_many(
        self, db: Connection, table: Table, rows: Sequence[Mapping[str, Any]]
    ) -> None: ...

    def insert_new(self, table: Table, values: Mapping[str, Any] | None = None) -> Insert: ...

    def append(self, db: Connection, entry: AuditEntry) -> AuditEntry: ...


class ControlStoreError(ResourceError, RuntimeError):
    """The control store cannot be reached or used; the message names the URL (no password)
    and how to recover."""


# SQLite's result codes for a file that is not (or no longer) a sound database, and for one
# this process cannot open or write; every other SQLite error is the caller's to handle.
_SQLITE_CORRUPT = {"SQLITE_NOTADB", "SQLITE_CORRUPT"}
_SQLITE_UNUSABLE = {"SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_FULL"}
_POSTGRES_SCHEMES = ("postgresql://", "postgres://", "postgresql+psycopg://")


class StoreConnection:
    """The URL, its secrets and transactions of one control store; see the module docstring."""

    def __init__(self, url: str, secrets: Iterable[str] = ()):
        self.url = url
        # Masked out of every message and audit entry: this URL's password and the caller's.
        self.secrets = frozenset(secrets) | url_secrets(url)
        if url.startswith("sqlite:///"):
            self.dialect = "sqlite"
            self._path = Path(url.removeprefix("sqlite:///"))
        elif url.startswith(_POSTGRES_SCHEMES):
            self.dialect = "postgresql"
        else:
            raise ControlStoreError(
                f"control store URL {self.masked(url)!r} is not supported: use sqlite:///PATH or "
                "postgresql://user@host:port/db (MEDALLION_CONTROL_URL)"
            )

    def masked(self, text: str) -> str:
        """``text`` with this store's known secrets and any URL password hidden."""
        return mask_credentials(text, self.secrets)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One short transaction on a fresh connection; commits, or rolls back on error. A
        store that is corrupt or cannot be opened raises ``ControlStoreError`` saying so."""
        with self._unusable_store():
            engine = self._engine()
            try:
                connection = engine.connect()
            except exc.DBAPIError as error:
                if self.dialect == "postgresql":
                    raise self._cannot_connect(error) from None
                raise
            with connection, connection.begin():
                yield connection

    def _engine(self) -> Engine:
        if self.dialect == "sqlite":
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise ControlStoreError(
                    f"the control store's folder {self._path.parent} cannot be created ({error}): "
                    "move what is in the way aside, or set MEDALLION_CONTROL_URL (or "
                    "MEDALLION_HOME) to a writable place"
                ) from error
            return _sqlite_engine(str(self._path))
        return _postgres_engine(encoded_url(self.url))

    @contextmanager
    def _unusable_store(self) -> Iterator[None]:
        """Turn SQLite's "not a database" (a damaged or foreign file), "cannot open" and a lost
        PostgreSQL connection into one ``ControlStoreError`` naming the store and the way out."""
        try:
            yield
        except exc.DBAPIError as error:
            original = error.orig
            if self.dialect == "sqlite" and isinstance(original, sqlite3.DatabaseError):
                name = getattr(original, "sqlite_errorname", "")
                if name in _SQLITE_CORRUPT:
                    raise ControlStoreError(self._corrupt(original)) from error
                if name in _SQLITE_UNUSABLE:
                    raise ControlStoreError(
                        f"the control store {self._path} cannot be opened or written "
                        f"({original}): check that its folder exists and is writable, or set "
                        "MEDALLION_CONTROL_URL (or MEDALLION_HOME) to a writable place"
                    ) from error
            if self.dialect == "postgresql" and isinstance(error, exc.OperationalError):
                reason = " ".join(self.masked(str(original)).split())
                raise ControlStoreError(
                    f"lost the connection to the control store {self.masked(self.url)} "
                    f"(MEDALLION_CONTROL_URL): {reason}"
                ) from None
            raise

    def _cannot_connect(self, error: exc.DBAPIError) -> ControlStoreError:
        # The driver's text is masked and the driver's exception dropped: a traceback would
        # print it unmasked.
        reason = " ".join(self.masked(str(error.orig)).split())  # psycopg's text spans lines
        return ControlStoreError(
            f"cannot connect to the control store {self.masked(self.url)} "
            f"(MEDALLION_CONTROL_URL): {reason}. Check that the server is up and the URL, "
            "user and database are right"
        )

    def _corrupt(self, error: sqlite3.DatabaseError) -> str:
        path = self._path
        return (
            f"the control store {path} is corrupt or not a SQLite database ({error}). Move it "
            f"aside: `mv {path} {path}.corrupt` (and its -wal and -shm files, if any); the next "
            "command creates a fresh, empty store. Its flag overrides, routes and audit log stay "
            f"in the moved file: `sqlite3 {path}.corrupt .recover | sqlite3 {path}` salvages "
            "what is readable"
        )


@functools.cache
def _sqlite_engine(path: str) -> Engine:
    engine = create_engine(f"sqlite:///{path}", poolclass=NullPool, connect_args={"timeout": 30})

    @event.listens_for(engine, "connect")
    def _connected(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # the driver begins nothing: _begin does
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")  # take the write lock up front

    return engine


@functools.cache
def _postgres_engine(url: str) -> Engine:
    driver_url = make_url(url).set(drivername="postgresql+psycopg")
    return create_engine(driver_url, poolclass=NullPool, connect_args={"connect_timeout": 10})
