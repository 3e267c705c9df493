"""The control store: all runtime state of the project, in one SQL database.

Embedded default: a SQLite file under the project's state folder
(``$MEDALLION_HOME/control.db``); PostgreSQL when ``MEDALLION_CONTROL_URL`` is a
``postgresql://`` URL. Tables are declared in ``schema.py``, statements built with SQLAlchemy
Core and every value bound by the driver; the code creates the schema and migrates it
(``migrations.py``; migrations run under a lock, so two processes starting at once do not race).

What it holds: control-flag overrides, routes and the audit log (this module); the derived
catalog (``replace_catalog``); and the runtime state of the steps (``state.py``, reached as
``store.state``): throttle cuts, evolved source columns, ingest manifests and the loads the
warehouse committed. Every change is written in one transaction with its audit entry.

Warehouse loads are recorded here, but the warehouse's own ledger (``<schema>.medallion_loads``,
``io/warehouse_load.py``) stays the authority on whether a version is loaded: it commits in the
same transaction as the loaded rows, which a row in another database cannot. Were this store
the authority, a crash between the warehouse's commit and this store's would load the version
twice. The store's record is written after the warehouse commits, for operators:
``medallion control status`` and the audit log show what was loaded, when, by which run.

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

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, false, insert, select, text
from sqlalchemy.dialects import postgresql, sqlite

from medallion_assets.control import schema
from medallion_assets.control.check_results import CheckLedger
from medallion_assets.control.engine import ControlStoreError, StoreConnection
from medallion_assets.control.migrations import LATEST, MIGRATIONS, current_version
from medallion_assets.control.migrations import migrate_to_latest as _migrate_to_latest
from medallion_assets.control.records import AuditEntry, iso_utc, utc_now
from medallion_assets.control.state import RuntimeState

if TYPE_CHECKING:
    from sqlalchemy import Connection, Insert, Table

    from medallion_assets.control.check_results import CheckLedger
    from medallion_assets.control.state import RuntimeState

SCOPES = ("pipeline", "layer", "dataset", "source", "target")

__all__ = [
    "MIGRATIONS",
    "SCOPES",
    "AuditEntry",
    "ControlStore",
    "ControlStoreError",
    "FlagOverride",
    "RouteOverride",
    "iso_utc",
    "utc_now",
]


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


class ControlStore(StoreConnection):
    """Flags, routes, the audit log and the runtime state; see the module docstring."""

    @classmethod
    def open(cls, url: str, secrets: Iterable[str] = ()) -> ControlStore:
        """The store at ``url``, its schema created or migrated to the current version."""
        store = cls(url, secrets)
        store.migrate()
        return store

    @functools.cached_property
    def state(self) -> RuntimeState:
        """The steps' runtime state in this store: throttle cuts, evolved columns, ingest
        manifests, warehouse loads."""

        return RuntimeState(self)

    @functools.cached_property
    def checks(self) -> CheckLedger:
        """The check results of published and rejected lake outputs."""

        return CheckLedger(self)

    # --- schema -------------------------------------------------------------------------------

    def schema_version(self) -> int:
        with self.transaction() as db:
            return current_version(db)

    def migrate(self) -> int:
        """Bring the schema to the newest version; returns it. Safe to call from many
        processes at once: the migration holds the database's write lock."""
        with self.transaction() as db:
            version = current_version(db)
            if version > LATEST:
                raise ControlStoreError(
                    f"the control store {self.masked(self.url)} has schema version {version}, "
                    f"newer than this medallion_assets knows ({LATEST}): upgrade the package"
                )
            _migrate_to_latest(db, version)
            return LATEST

    def upsert(self, table: Table, values: Mapping[str, Any]) -> Insert:
        """``INSERT ... ON CONFLICT (key) DO UPDATE`` of ``values`` in this store's dialect:
        concurrent writers of one row each land, the last one wins."""
        return self._on_conflict_update(table, list(values)).values(dict(values))

    def upsert_many(self, db: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
        """Upsert ``rows`` (each with the same columns) in one batch of the driver's: thousands
        of manifest entries cost one statement, not a round trip each."""
        if rows:
            db.execute(self._on_conflict_update(table, list(rows[0])), [dict(r) for r in rows])

    def _on_conflict_update(self, table: Table, names: Sequence[str]) -> Insert:
        keys = [c.name for c in table.primary_key.columns]
        if self.dialect == "postgresql":
            pg = postgresql.insert(table)
            changed = {n: pg.excluded[n] for n in names if n not in keys}
            return pg.on_conflict_do_update(index_elements=keys, set_=changed)
        lite = sqlite.insert(table)
        return lite.on_conflict_do_update(
            index_elements=keys, set_={n: lite.excluded[n] for n in names if n not in keys}
        )

    def insert_new(self, table: Table, values: Mapping[str, Any] | None = None) -> Insert:
        """``INSERT ... ON CONFLICT (key) DO NOTHING``: a row the table already has stays.
        Without ``values``, the rows are the ones the statement is executed with."""
        if self.dialect == "postgresql":
            pg = postgresql.insert(table)
            pg = pg.values(dict(values)) if values is not None else pg
            return pg.on_conflict_do_nothing()
        lite = sqlite.insert(table)
        lite = lite.values(dict(values)) if values is not None else lite
        return lite.on_conflict_do_nothing()

    # --- flags --------------------------------------------------------------------------------

    def flags(self) -> list[FlagOverride]:
        table = schema.flag_overrides
        query = select(*schema.columns_for(table, FlagOverride))
        query = query.order_by(table.c.scope, table.c.name)
        with self.transaction() as db:
            rows = db.execute(query).all()
        return [FlagOverride(*row) for row in rows]

    def set_flag(
        self, scope: str, name: str, enabled: bool, reason: str, changed_by: str
    ) -> FlagOverride:
        """Override one flag, and record the change in the audit log in the same transaction."""
        if scope not in SCOPES:
            raise ValueError(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")
        flag = FlagOverride(scope, name, enabled, reason, changed_by, utc_now())
        row = {
            "scope": scope,
            "name": name,
            "enabled": enabled,
            "reason": reason,
            "changed_by": changed_by,
            "changed_at": flag.changed_at,
        }
        with self.transaction() as db:
            db.execute(self.upsert(schema.flag_overrides, row))
            verb = "enabled" if enabled else "disabled"
            self.append(
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
        table = schema.route_overrides
        query = select(*schema.columns_for(table, RouteOverride)).order_by(table.c.dataset)
        with self.transaction() as db:
            rows = db.execute(query).all()
        return {r[0]: RouteOverride(*r) for r in rows}

    def set_route(
        self,
        dataset: str,
        route: str,
        reason: str,
        changed_by: str,
        run_id: str = "",
        details: Mapping[str, Any] | None = None,
    ) -> RouteOverride:
        """Read ``dataset`` along ``route`` from now on ("primary" goes back); audited in the
        same transaction, with ``details`` (a recovery's path) in the entry."""
        override = RouteOverride(dataset, route, reason, changed_by, utc_now(), run_id)
        table = schema.route_overrides
        with self.transaction() as db:
            if route == "primary":
                db.execute(delete(table).where(table.c.dataset == dataset))
            else:
                db.execute(self.upsert(table, vars(override)))
            self.append(
                db,
                AuditEntry(
                    override.changed_at,
                    "route",
                    f"dataset:{dataset}",
                    f"{dataset} rerouted to {route} by {changed_by}: {reason}",
                    run_id,
                    {"route": route, "reason": reason, "changed_by": changed_by, **(details or {})},
                ),
            )
        return override

    # --- catalog export -----------------------------------------------------------------------

    def replace_catalog(self, rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, int]:
        """Replace the content of every catalog table with ``rows`` in one transaction (a
        reader sees the previous export or this one); audited. Returns rows per table."""
        counts = {}
        with self.transaction() as db:
            for name, table in schema.catalog_tables.items():
                db.execute(delete(table))
                wanted = [
                    {c.name: row.get(c.name) for c in table.columns} for row in rows.get(name, ())
                ]
                if wanted:
                    db.execute(insert(table), wanted)
                counts[name] = len(wanted)
            summary = ", ".join(f"{n} {t}" for t, n in counts.items())
            self.append(db, AuditEntry(utc_now(), "export", "catalog", f"exported {summary}"))
        return counts

    def query(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Rows of a read-only query with ``:name`` parameters bound by the driver, for
        reports and tests."""
        with self.transaction() as db:
            return [tuple(row) for row in db.execute(text(sql), dict(params or {})).all()]

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
        with self.transaction() as db:
            return self.append(db, entry)

    def append(self, db: Connection, entry: AuditEntry) -> AuditEntry:
        """Write ``entry`` (masked) in the caller's transaction: a change and its audit entry
        commit together or not at all."""
        entry = replace(
            entry, message=self.masked(entry.message), details=self._mask(entry.details)
        )
        db.execute(
            insert(schema.audit_log).values(
                at=entry.at,
                kind=entry.kind,
                entity=entry.entity,
                run_id=entry.run_id,
                message=entry.message,
                details=json.dumps(entry.details, default=str, sort_keys=True),
            )
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
        log = schema.audit_log
        query = select(
            log.c.id, log.c.at, log.c.kind, log.c.entity, log.c.run_id, log.c.message, log.c.details
        )
        if entities is not None:
            query = query.where(log.c.entity.in_(list(entities)) if entities else false())
        if since is not None:
            query = query.where(log.c.at >= since)
        if run_id is not None:
            query = query.where(log.c.run_id == run_id)
        query = query.order_by(log.c.id.desc())
        if limit is not None:
            query = query.limit(limit)
        with self.transaction() as db:
            rows = db.execute(query).all()
        return [
            AuditEntry(r[1], r[2], r[3], r[5], r[4], json.loads(r[6]), int(r[0]))
            for r in reversed(rows)
        ]
