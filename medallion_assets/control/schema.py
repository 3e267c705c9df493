"""The control store's tables, declared once for SQLite and PostgreSQL.

Flags, routes and the audit log (the control plane), the derived catalog in the seed design's
tables (``medallion catalog export``), and the runtime state the steps keep: throttle cuts,
evolved source columns, ingest manifests (one row per raw object) and the loads the warehouse
committed. Times the store compares are ISO 8601 UTC text (``changed_at``, ``at``); times the
runtime computes with are epoch seconds (``since``, ``until``, ``ingested_at``).

``migrations.py`` creates these tables step by step; a change to a table here needs a new step
there.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Identity,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
)
from sqlalchemy.types import TypeEngine

from medallion_assets.catalog.export import CATALOG_TABLES, KEYS, V2_TABLES

metadata = MetaData()


def columns_for(table: Table, record: type[Any]) -> list[Column[Any]]:
    """``table``'s columns named as the dataclass ``record``'s fields, in the fields' order:
    ``record(*row)`` then builds one from a row."""
    return [table.c[f.name] for f in fields(record)]


# The one place the dialects differ: SQLite's rowid alias must be INTEGER; PostgreSQL's is an
# identity column (what the hand-written schema before SQLAlchemy created, kept as it was).
_ID = BigInteger().with_variant(Integer(), "sqlite")

schema_version = Table(
    "medallion_schema",
    metadata,
    Column("version", Integer, nullable=False),
)

flag_overrides = Table(
    "control_flag_overrides",
    metadata,
    Column("scope", Text, primary_key=True),
    Column("name", Text, primary_key=True),
    Column("enabled", Boolean, nullable=False),
    Column("reason", Text, nullable=False),
    Column("changed_by", Text, nullable=False),
    Column("changed_at", Text, nullable=False),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", _ID, Identity(always=True), primary_key=True),
    Column("at", Text, nullable=False),
    Column("kind", Text, nullable=False),
    Column("entity", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("details", Text, nullable=False),  # JSON
    Index("audit_log_at", "at"),
    Index("audit_log_entity", "entity", "at"),
    sqlite_autoincrement=True,
)

_SQL_TYPES: dict[str, TypeEngine[Any]] = {
    "TEXT": Text(),
    "BOOLEAN": Boolean(),
    "INTEGER": Integer(),
    "REAL": Float(),
}


def _catalog_table(name: str, into: MetaData, leave_out: tuple[str, ...] = ()) -> Table:
    return Table(
        name,
        into,
        *(
            Column(column, _SQL_TYPES[kind], primary_key=column in KEYS[name])
            for column, kind in CATALOG_TABLES[name]
            if column not in leave_out
        ),
    )


catalog_tables: dict[str, Table] = {name: _catalog_table(name, metadata) for name in CATALOG_TABLES}

# The catalog tables as version 2 created them (migrations.py), in a MetaData of their own.
catalog_tables_v2: dict[str, Table] = {
    name: _catalog_table(name, MetaData(), added) for name, added in V2_TABLES.items()
}
# The columns version 8 added to version 2's tables, and the tables it created.
CATALOG_V8_COLUMNS: tuple[tuple[str, str, str], ...] = tuple(
    (name, column, kind)
    for name, added in V2_TABLES.items()
    for column, kind in CATALOG_TABLES[name]
    if column in added
)
CATALOG_V8_TABLES = tuple(t for name, t in catalog_tables.items() if name not in V2_TABLES)

route_overrides = Table(
    "route_overrides",
    metadata,
    Column("dataset", Text, primary_key=True),
    Column("route", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("changed_by", Text, nullable=False),
    Column("changed_at", Text, nullable=False),
    Column("run_id", Text, nullable=False),
)

# --- runtime state (version 4) ---------------------------------------------------------------

throttle_cuts = Table(
    "throttle_cuts",
    metadata,
    Column("system", Text, primary_key=True),
    Column("factor", Float, nullable=False),
    Column("since", Float, nullable=False),  # epoch seconds of the last halving
    Column("until", Float, nullable=False),  # epoch seconds: the cut lapses then
    Column("reason", Text, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("changed_at", Text, nullable=False),
)

evolved_columns = Table(
    "evolved_columns",
    metadata,
    Column("source", Text, primary_key=True),
    Column("name", Text, primary_key=True),
    Column("position", Integer, nullable=False),  # the order they were added in
    Column("type", Text, nullable=False),
    Column("evolved_at", Float, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("files", Text, nullable=False),  # JSON list: the raw files that carried it first
)

ingest_manifest = Table(
    "ingest_manifest",
    metadata,
    Column("source", Text, primary_key=True),
    Column("partition", Text, primary_key=True),  # "" for a source without partitions
    Column("object_key", Text, primary_key=True),
    Column("etag", Text, nullable=False),
    Column("batch_id", Text, nullable=False),
    Column("ingested_at", Float, nullable=False),
    Column("entry", Text, nullable=False),  # JSON: the whole entry (landing, sha256, ...)
)

warehouse_loads = Table(
    "warehouse_loads",
    metadata,
    Column("dataset", Text, primary_key=True),
    Column("partition", Text, primary_key=True),  # "" for a table without partitions
    Column("lake_version", Text, primary_key=True),
    Column("warehouse_table", Text, nullable=False),
    Column("mode", Text, nullable=False),
    Column("rows", BigInteger, nullable=False),
    Column("run_id", Text, nullable=False),
    Column("loaded_at", Text, nullable=False),
    Index("warehouse_loads_at", "dataset", "partition", "loaded_at"),
)

STATE_TABLES = (throttle_cuts, evolved_columns, ingest_manifest, warehouse_loads)

# --- operators' profile overrides (version 5) -----------------------------------------------

profile_overrides = Table(
    "profile_overrides",
    metadata,
    Column("pipeline", Text, primary_key=True),  # a pipeline id, or "all"
    Column("profile", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("changed_by", Text, nullable=False),
    Column("changed_at", Text, nullable=False),
)

# --- shared rate budgets and operators' throttles (version 6) ---------------------------------

# One budget per system and dimension, shared by every step of every run on any host, kept as
# the time up to which its rate is reserved (a generic cell rate algorithm: a reservation costs
# its amount over the rate in force when it is made); a step leases a slice with one atomic
# upsert (throttles/rate_budgets.py).
rate_budgets = Table(
    "rate_budgets",
    metadata,
    Column("system", Text, primary_key=True),
    Column("dimension", Text, primary_key=True),  # rows, bytes or requests
    Column("reserved_until", Float, nullable=False),  # epoch s (PostgreSQL: the server's clock)
)

# The rates an operator set on a system (`medallion control throttle`), over systems.yaml's;
# a rate left NULL keeps systems.yaml's.
throttle_overrides = Table(
    "throttle_overrides",
    metadata,
    Column("system", Text, primary_key=True),
    Column("rows_per_second", Float, nullable=True),
    Column("bytes_per_second", Float, nullable=True),
    Column("requests_per_second", Float, nullable=True),
    Column("reason", Text, nullable=False),
    Column("changed_by", Text, nullable=False),
    Column("changed_at", Text, nullable=False),
)

# --- check results of lake outputs (version 9) -------------------------------------------------

# The blocking and warning checks' results of a table's (day's) newest published version and of
# its newest output they rejected: a skipped build reports the published results again, and a
# rebuild from the same code and inputs as a rejected output is refused without running.
check_results = Table(
    "check_results",
    metadata,
    Column("dataset", Text, primary_key=True),
    Column("partition", Text, primary_key=True),  # "" for a table without partitions
    Column("outcome", Text, primary_key=True),  # published or rejected
    Column("version", Text, nullable=False),  # the lake version, or where a rejected one is kept
    Column("code_version", Text, nullable=False),
    Column("inputs", Text, nullable=False),  # JSON: input -> the version read
    Column("checks", Text, nullable=False),  # JSON: the results
    Column("recorded_at", Float, nullable=False),
    Column("run_id", Text, nullable=False),
)

# --- nodes observed or declared down (version 7) ----------------------------------------------

# A source, replica or system (``source:NAME``...) healing saw fail or an operator marked down
# (`medallion control down`); recovery routes every table around them until they are up again.
down_nodes = Table(
    "down_nodes",
    metadata,
    Column("node", Text, primary_key=True),
    Column("reason", Text, nullable=False),
    Column("changed_by", Text, nullable=False),
    Column("changed_at", Text, nullable=False),
    Column("run_id", Text, nullable=False),
)
