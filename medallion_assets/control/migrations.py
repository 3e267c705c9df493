"""The control store's versioned migrations: step ``i`` takes the schema from version ``i`` to
``i + 1``; ``medallion_schema`` holds the version a database is at.

Versions 1 to 3 are the schema the store had before SQLAlchemy (its hand-written DDL created the
same tables, so a control.db or PostgreSQL database made then migrates forward in place, keeping
every flag, route and audit entry); version 4 adds the runtime state that used to be JSON files
under ``<lake>/_state``; version 5 the operators' profile overrides; version 6 the rate budgets
shared by every step and the operators' throttles; version 7 the nodes seen or marked down;
version 8 the catalog export's profiles, throttles and recovery paths; version 9 the check
results of published and rejected lake outputs.

Every step runs in the transaction that read the version, under the store's migration lock
(SQLite's write lock, a PostgreSQL advisory lock), so two processes starting at once do not
both migrate. A later change to a table adds a step (``ALTER TABLE``...); a step that created
the table before the change must then spell out the table as it was at that version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import func, insert, select, text, update

from medallion_assets.control import schema

if TYPE_CHECKING:
    from sqlalchemy import Connection, Table

Step = Callable[["Connection"], None]

# Key of the PostgreSQL advisory lock the migrations (and version reads) hold.
MIGRATION_LOCK = 727274


def _create(*tables: Table) -> Step:
    def step(connection: Connection) -> None:
        for table in tables:
            table.create(connection)

    return step


def _catalog_v8(connection: Connection) -> None:
    for table, column, kind in schema.CATALOG_V8_COLUMNS:
        connection.execute(text(f'ALTER TABLE {table} ADD COLUMN "{column}" {kind}'))
    for new in schema.CATALOG_V8_TABLES:
        new.create(connection)


MIGRATIONS: tuple[Step, ...] = (
    # v1: control-flag overrides and the audit log
    _create(schema.flag_overrides, schema.audit_log),
    # v2: the derived catalog in the seed design's tables, written by `medallion catalog export`
    _create(*schema.catalog_tables_v2.values()),
    # v3: the route a table is read along when not its primary (a replica or an alternate)
    _create(schema.route_overrides),
    # v4: the runtime state: throttle cuts, evolved columns, ingest manifests, warehouse loads
    _create(*schema.STATE_TABLES),
    # v5: the profile an operator put a pipeline (or all of them) in, over profiles.yaml
    _create(schema.profile_overrides),
    # v6: rate budgets shared by every step and run of a system, and operators' throttles
    _create(schema.rate_budgets, schema.throttle_overrides),
    # v7: the sources, replicas and systems seen or marked down, which recovery routes around
    _create(schema.down_nodes),
    # v8: the catalog export's profiles, profile_settings, pipeline_profiles, throttles and
    # dataset_recovery_paths, and dataset_lineage's transformations
    lambda connection: _catalog_v8(connection),
    # v9: the check results of each table's published version and of its rejected output
    _create(schema.check_results),
)
LATEST = len(MIGRATIONS)


def current_version(connection: Connection) -> int:
    """The schema version (0: an empty database), under the migration lock, which the caller's
    transaction then holds until it ends (SQLite: every transaction begins IMMEDIATE)."""
    if connection.dialect.name == "postgresql":
        connection.execute(select(func.pg_advisory_xact_lock(MIGRATION_LOCK)))
    schema.schema_version.create(connection, checkfirst=True)
    version = connection.execute(select(schema.schema_version.c.version)).scalar()
    return int(version) if version is not None else 0


def migrate_to_latest(connection: Connection, version: int) -> None:
    """Run the steps from ``version`` on and record the newest version."""
    for step in MIGRATIONS[version:]:
        step(connection)
    if version == 0:
        connection.execute(insert(schema.schema_version).values(version=LATEST))
    elif version < LATEST:
        connection.execute(update(schema.schema_version).values(version=LATEST))
