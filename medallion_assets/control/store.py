"""The control store: runtime control-flag overrides and the audit log, in SQL.

Embedded default: a SQLite file under the project's state folder
(``$MEDALLION_HOME/control.db``); PostgreSQL when ``MEDALLION_CONTROL_URL`` is a
``postgresql://`` URL. The code creates the schema and migrates it (``medallion_schema`` holds
the version; migrations run under a lock, so two processes starting at once do not race).

Several run processes write at once: every operation opens a short-lived connection and commits
one small transaction. SQLite runs in WAL mode with a busy timeout, so a writer waits for the
lock instead of failing; PostgreSQL serializes the rows itself.

Nothing secret is stored: every audit entry's message and details pass through
``mask_credentials`` with the store's known secrets (its own URL's password and those the
caller passes, the settings in force), whatever error text a step put in them.

    store = ControlStore.open("sqlite:////tmp/control.db")
    store.set_flag("dataset", "gold.revenue", False, "bad FX feed", "oncall")
    store.flags()  # [FlagOverride(scope="dataset", name="gold.revenue", enabled=False, ...)]
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from medallion_assets.catalog.export import CATALOG_TABLES, KEYS
from medallion_assets.io.credentials import encoded_url, mask_credentials, url_secrets
from medallion_assets.runtime.errors import ResourceError

SCOPES = ("pipeline", "layer", "dataset", "source", "target")

# Each entry migrates from version i to i + 1; statements use "?" placeholders and portable
# types (the id column is the one place the dialects differ: see _IDENTITY).
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE control_flag_overrides (
            scope TEXT NOT NULL,
            name TEXT NOT NULL,
            enabled BOOLEAN NOT NULL,
            reason TEXT NOT NULL,
            changed_by TEXT NOT NULL,
            changed_at TEXT NOT NULL,
            PRIMARY KEY (scope, name))""",
        """CREATE TABLE audit_log (
            id {identity},
            at TEXT NOT NULL,
            kind TEXT NOT NULL,
            entity TEXT NOT NULL,
            run_id TEXT NOT NULL,
            message TEXT NOT NULL,
            details TEXT NOT NULL)""",
        "CREATE INDEX audit_log_at ON audit_log (at)",
        "CREATE INDEX audit_log_entity ON audit_log (entity, at)",
    ),
    # v2: the derived catalog in the seed design's tables, written by `medallion catalog export`
    tuple(
        f"CREATE TABLE {table} ("
        + ", ".join(f"{name} {{{kind.lower()}}}" for name, kind in columns)
        + f", PRIMARY KEY ({', '.join(KEYS[table])}))"
        for table, columns in CATALOG_TABLES.items()
    ),
    # v3: the route a table is read along when not its primary (a replica or an alternate)
    (
        """CREATE TABLE route_overrides (
            dataset TEXT NOT NULL PRIMARY KEY,
            route TEXT NOT NULL,
            reason TEXT NOT NULL,
            changed_by TEXT NOT NULL,
            changed_at TEXT NOT NULL,
            run_id TEXT NOT NULL)""",
    ),
)
_TYPES = {
    "sqlite": {
        "identity": "INTEGER PRIMARY KEY AUTOINCREMENT",
        "text": "TEXT",
        "boolean": "BOOLEAN",
        "integer": "INTEGER",
        "real": "REAL",
    },
    "postgresql": {
        "identity": "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
        "text": "TEXT",
        "boolean": "BOOLEAN",
        "integer": "INTEGER",
        "real": "DOUBLE PRECISION",
    },
}


class ControlStoreError(ResourceError, RuntimeError):
    """The control store cannot be reached or used; the message names the URL (no password)
    and how to recover."""


# SQLite's result codes for a file that is not (or no longer) a sound database, and for one
# this process cannot open or write; every other SQLite error is the caller's to handle.
_SQLITE_CORRUPT = {"SQLITE_NOTADB", "SQLITE_CORRUPT"}
_SQLITE_UNUSABLE = {"SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_FULL"}


@dataclass(frozen=True)
class FlagOverride:
    scope: str
    name: str
    enabled: bool
    reason: str
    changed_by: str
    changed_at: str  # ISO 8601, UTC

    @property
    def entity(self) -> str:
        return f"{self.scope}:{self.name}"


@dataclass(frozen=True)
class RouteOverride:
    """A table read along another route than its primary, since ``changed_at``."""

    dataset: str
    route: str
    reason: str
    changed_by: str
    changed_at: str  # ISO 8601, UTC
    run_id: str = ""


@dataclass(frozen=True)
class AuditEntry:
    at: str  # ISO 8601, UTC
    kind: str  # run, attempt, error, healing, flag, outcome, ...
    entity: str  # "dataset:silver.orders", "run", "source:orders", ...
    message: str
    run_id: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


def iso_utc(seconds: float) -> str:
    """Epoch seconds as sortable ISO 8601 UTC text (the store compares these as strings)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{int(seconds % 1 * 1e6):06d}Z"


def utc_now() -> str:
    return iso_utc(time.time())


def default_url(env: Mapping[str, str], project_root: Path) -> str:
    """``$MEDALLION_CONTROL_URL``, else a SQLite file in the project's state folder (the
    settings object computes it: ``MedallionSettings.effective_control_url``)."""
    from medallion_assets.settings import MedallionSettings

    return MedallionSettings.from_env(env, project_root).effective_control_url


class ControlStore:
    """Flags and audit log in one SQL database; see the module docstring."""

    def __init__(self, url: str, secrets: Iterable[str] = ()):
        self.url = url
        # Masked out of every message and audit entry: this URL's password and the caller's.
        self.secrets = frozenset(secrets) | url_secrets(url)
        if url.startswith("sqlite:///"):
            self.dialect = "sqlite"
            self._path = Path(url.removeprefix("sqlite:///"))
        elif url.startswith(("postgresql://", "postgres://")):
            self.dialect = "postgresql"
        else:
            raise ControlStoreError(
                f"control store URL {self.masked(url)!r} is not supported: use sqlite:///PATH or "
                "postgresql://user@host:port/db (MEDALLION_CONTROL_URL)"
            )

    @classmethod
    def open(cls, url: str, secrets: Iterable[str] = ()) -> ControlStore:
        """The store at ``url``, its schema created or migrated to the current version."""
        store = cls(url, secrets)
        store.migrate()
        return store

    # --- connections and schema ---------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """One short transaction on a fresh connection; commits, or rolls back on error. A
        store that is corrupt or cannot be opened raises ``ControlStoreError`` saying so."""
        with self._unusable_store():
            connection = self._connect()
            try:
                if self.dialect == "sqlite":
                    connection.execute("BEGIN IMMEDIATE")  # take the write lock up front
                yield connection
                connection.commit()
            except BaseException:
                connection.rollback()
                raise
            finally:
                connection.close()

    @contextmanager
    def _unusable_store(self) -> Iterator[None]:
        """Turn SQLite's "not a database" (a damaged or foreign file), "cannot open" and a lost
        PostgreSQL connection into one ``ControlStoreError`` naming the store and the way out."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            name = getattr(error, "sqlite_errorname", "")
            if self.dialect == "sqlite" and name in _SQLITE_CORRUPT:
                raise ControlStoreError(self._corrupt(error)) from error
            if self.dialect == "sqlite" and name in _SQLITE_UNUSABLE:
                raise ControlStoreError(
                    f"the control store {self._path} cannot be opened or written ({error}): "
                    "check that its folder exists and is writable, or set MEDALLION_CONTROL_URL "
                    "(or MEDALLION_HOME) to a writable place"
                ) from error
            raise
        except Exception as error:
            if self.dialect == "postgresql" and _connection_lost(error):
                reason = " ".join(self.masked(str(error)).split())
                raise ControlStoreError(
                    f"lost the connection to the control store {self.masked(self.url)} "
                    f"(MEDALLION_CONTROL_URL): {reason}"
                ) from None
            raise

    def _corrupt(self, error: sqlite3.DatabaseError) -> str:
        path = self._path
        return (
            f"the control store {path} is corrupt or not a SQLite database ({error}). Move it "
            f"aside: `mv {path} {path}.corrupt` (and its -wal and -shm files, if any); the next "
            "command creates a fresh, empty store. Its flag overrides, routes and audit log stay "
            f"in the moved file: `sqlite3 {path}.corrupt .recover | sqlite3 {path}` salvages "
            "what is readable"
        )

    def _connect(self) -> Any:
        if self.dialect == "sqlite":
            try:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise ControlStoreError(
                    f"the control store's folder {self._path.parent} cannot be created ({error}): "
                    "move what is in the way aside, or set MEDALLION_CONTROL_URL (or "
                    "MEDALLION_HOME) to a writable place"
                ) from error
            connection = sqlite3.connect(self._path, timeout=30, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA busy_timeout=30000")
            return _SqliteConnection(connection)
        import psycopg

        try:
            return _PostgresConnection(psycopg.connect(encoded_url(self.url), connect_timeout=10))
        except psycopg.Error as error:
            # The driver's text is masked and the driver's exception dropped: a traceback
            # would print it unmasked.
            reason = " ".join(self.masked(str(error)).split())  # psycopg's text spans lines
            raise ControlStoreError(
                f"cannot connect to the control store {self.masked(self.url)} "
                f"(MEDALLION_CONTROL_URL): {reason}. Check that the server is up and the URL, "
                "user and database are right"
            ) from None

    def masked(self, text: str) -> str:
        """``text`` with this store's known secrets and any URL password hidden."""
        return mask_credentials(text, self.secrets)

    def schema_version(self) -> int:
        with self._transaction() as db:
            return self._version(db)

    def _version(self, db: Any) -> int:
        """The schema version, under the lock that serializes migrations (SQLite's write lock
        is already held: every transaction here begins IMMEDIATE)."""
        if self.dialect == "postgresql":
            db.execute("SELECT pg_advisory_xact_lock(727274)")  # one migrator at a time
        db.execute("CREATE TABLE IF NOT EXISTS medallion_schema (version INTEGER NOT NULL)")
        row = db.query("SELECT version FROM medallion_schema")
        return int(row[0][0]) if row else 0

    def migrate(self) -> int:
        """Bring the schema to the newest version; returns it. Safe to call from many
        processes at once: the migration holds the database's write lock."""
        with self._transaction() as db:
            version = self._version(db)
            if version > len(MIGRATIONS):
                raise ControlStoreError(
                    f"the control store {self.masked(self.url)} has schema version {version}, "
                    f"newer than this medallion_assets knows ({len(MIGRATIONS)}): upgrade the "
                    "package"
                )
            for statements in MIGRATIONS[version:]:
                for statement in statements:
                    db.execute(statement.format(**_TYPES[self.dialect]))
            if version == 0:
                db.execute("INSERT INTO medallion_schema (version) VALUES (?)", (len(MIGRATIONS),))
            elif version < len(MIGRATIONS):
                db.execute("UPDATE medallion_schema SET version = ?", (len(MIGRATIONS),))
            return len(MIGRATIONS)

    # --- flags --------------------------------------------------------------------------------

    def flags(self) -> list[FlagOverride]:
        with self._transaction() as db:
            rows = db.query(
                "SELECT scope, name, enabled, reason, changed_by, changed_at "
                "FROM control_flag_overrides ORDER BY scope, name"
            )
        return [FlagOverride(r[0], r[1], bool(r[2]), r[3], r[4], r[5]) for r in rows]

    def set_flag(
        self, scope: str, name: str, enabled: bool, reason: str, changed_by: str
    ) -> FlagOverride:
        """Override one flag, and record the change in the audit log in the same transaction."""
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")
        flag = FlagOverride(scope, name, enabled, reason, changed_by, utc_now())
        with self._transaction() as db:
            # An upsert: concurrent writers of one flag each land, the last one wins.
            db.execute(
                "INSERT INTO control_flag_overrides "
                "(scope, name, enabled, reason, changed_by, changed_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, name) DO UPDATE SET "
                "enabled = excluded.enabled, reason = excluded.reason, "
                "changed_by = excluded.changed_by, changed_at = excluded.changed_at",
                (scope, name, enabled, reason, changed_by, flag.changed_at),
            )
            verb = "enabled" if enabled else "disabled"
            self._append(
                db,
                AuditEntry(
                    flag.changed_at,
                    "flag",
                    flag.entity,
                    f"{flag.entity} {verb} by {changed_by}: {reason}",
                    details={"enabled": enabled, "reason": reason, "changed_by": changed_by},
                ),
            )
        return flag

    # --- routes -------------------------------------------------------------------------------

    def routes(self) -> dict[str, RouteOverride]:
        """The tables read along a route other than their primary, by table."""
        with self._transaction() as db:
            rows = db.query(
                "SELECT dataset, route, reason, changed_by, changed_at, run_id "
                "FROM route_overrides ORDER BY dataset"
            )
        return {r[0]: RouteOverride(*r) for r in rows}

    def set_route(
        self, dataset: str, route: str, reason: str, changed_by: str, run_id: str = ""
    ) -> RouteOverride:
        """Read ``dataset`` along ``route`` from now on ("primary" goes back); audited in the
        same transaction."""
        override = RouteOverride(dataset, route, reason, changed_by, utc_now(), run_id)
        with self._transaction() as db:
            if route == "primary":
                db.execute("DELETE FROM route_overrides WHERE dataset = ?", (dataset,))
            else:
                db.execute(
                    "INSERT INTO route_overrides "
                    "(dataset, route, reason, changed_by, changed_at, run_id) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (dataset) DO UPDATE SET "
                    "route = excluded.route, reason = excluded.reason, "
                    "changed_by = excluded.changed_by, changed_at = excluded.changed_at, "
                    "run_id = excluded.run_id",
                    (dataset, route, reason, changed_by, override.changed_at, run_id),
                )
            self._append(
                db,
                AuditEntry(
                    override.changed_at,
                    "route",
                    f"dataset:{dataset}",
                    f"{dataset} rerouted to {route} by {changed_by}: {reason}",
                    run_id,
                    {"route": route, "reason": reason, "changed_by": changed_by},
                ),
            )
        return override

    # --- catalog export -----------------------------------------------------------------------

    def replace_catalog(self, rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, int]:
        """Replace the content of every catalog table with ``rows`` in one transaction (a
        reader sees the previous export or this one); audited. Returns rows per table."""
        counts = {}
        with self._transaction() as db:
            for table, columns in CATALOG_TABLES.items():
                names = [name for name, _ in columns]
                db.execute(f"DELETE FROM {table}")
                insert = (
                    f"INSERT INTO {table} ({', '.join(names)}) "
                    f"VALUES ({', '.join('?' for _ in names)})"
                )
                for row in rows.get(table, ()):
                    db.execute(insert, tuple(row.get(n) for n in names))
                counts[table] = len(rows.get(table, ()))
            summary = ", ".join(f"{n} {t}" for t, n in counts.items())
            self._append(db, AuditEntry(utc_now(), "export", "catalog", f"exported {summary}"))
        return counts

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read-only query (``?`` placeholders), for reports and tests."""
        with self._transaction() as db:
            return db.query(sql, params)

    # --- audit log ----------------------------------------------------------------------------

    def record(
        self,
        kind: str,
        entity: str,
        message: str,
        run_id: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> AuditEntry:
        entry = AuditEntry(utc_now(), kind, entity, message, run_id, dict(details or {}))
        with self._transaction() as db:
            return self._append(db, entry)

    def _append(self, db: Any, entry: AuditEntry) -> AuditEntry:
        entry = replace(
            entry, message=self.masked(entry.message), details=self._mask(entry.details)
        )
        db.execute(
            "INSERT INTO audit_log (at, kind, entity, run_id, message, details) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                entry.at,
                entry.kind,
                entry.entity,
                entry.run_id,
                entry.message,
                json.dumps(entry.details, default=str, sort_keys=True),
            ),
        )
        return entry

    def _mask(self, value: Any) -> Any:
        """``value`` (audit details: JSON-like) with every string in it masked."""
        if isinstance(value, str):
            return self.masked(value)
        if isinstance(value, Mapping):
            return {k: self._mask(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._mask(v) for v in value]
        return value

    def audit(
        self,
        entities: Sequence[str] | None = None,
        since: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
    ) -> list[AuditEntry]:
        """Entries oldest first, optionally only these entities, from ``since`` (ISO text) on,
        of one run; ``limit`` keeps the newest."""
        where, params = [], []
        if entities is not None:
            where.append(f"entity IN ({', '.join('?' for _ in entities)})" if entities else "1=0")
            params += list(entities)
        if since is not None:
            where.append("at >= ?")
            params.append(since)
        if run_id is not None:
            where.append("run_id = ?")
            params.append(run_id)
        sql = "SELECT id, at, kind, entity, run_id, message, details FROM audit_log"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        with self._transaction() as db:
            rows = db.query(sql, tuple(params))
        return [
            AuditEntry(r[1], r[2], r[3], r[5], r[4], json.loads(r[6]), int(r[0]))
            for r in reversed(rows)
        ]


class _SqliteConnection:
    def __init__(self, connection: sqlite3.Connection):
        self._connection = connection

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._connection.execute(sql, params)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return list(self._connection.execute(sql, params).fetchall())

    def commit(self) -> None:
        self._connection.execute("COMMIT")

    def rollback(self) -> None:
        if self._connection.in_transaction:
            self._connection.execute("ROLLBACK")

    def close(self) -> None:
        self._connection.close()


class _PostgresConnection:
    def __init__(self, connection: Any):
        self._connection = connection

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._connection.execute(sql.replace("?", "%s"), params)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return list(self._connection.execute(sql.replace("?", "%s"), params).fetchall())

    def commit(self) -> None:
        self._connection.commit()

    def rollback(self) -> None:
        self._connection.rollback()

    def close(self) -> None:
        self._connection.close()


def _connection_lost(error: Exception) -> bool:
    import psycopg

    return isinstance(error, psycopg.OperationalError)
