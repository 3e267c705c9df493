"""A load of only the keys that changed between two lake versions of a table, into a keyed
target that holds the first of them (``run_changes_load``).

A rebuilt table usually differs from the version the warehouse holds in a few keys (a merge
table's increment, a rebuilt gold table whose new orders touched a handful of rows). Instead of
staging every row, the load stages the new version's rows of the changed keys and the changed
keys themselves, then, in ONE transaction: locks the table, checks that the ledger still holds
exactly the base version (else ``NotAtBase``: the caller loads the whole version), deletes every
changed key (a key the new version dropped goes too), inserts the staged rows and records the
new version. The warehouse then holds what a whole-version load would have given it, which the
reconciliation after COMMIT checks as for any load (the rows in the table against the version's
rows, and no repeated key).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from medallion_assets.io import warehouse_sql as sql
from medallion_assets.io import warehouse_types
from medallion_assets.io.warehouse_load import (
    BATCH_ROWS,
    LoadReport,
    LoadSession,
    LoadUnit,
    Throttle,
    check_merge_keys,
    create_table_if_missing,
    drop_quietly,
    ensure_table,
    held_versions,
    reconcile,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from medallion_assets.catalog.models import Target


class NotAtBase(RuntimeError):
    """The warehouse does not hold exactly the base version (never loaded, another version, a
    rollback since): only a whole-version load is right."""


def loaded_version(session: LoadSession, target: Target, partition: str | None) -> str | None:
    """The one lake version the warehouse's ledger holds for the table (the partition), or None
    (none, or several: an append's history)."""
    versions = held_versions(session, target.warehouse_table, partition)
    return next(iter(versions)) if len(versions) == 1 else None


def run_changes_load(
    session: LoadSession,
    target: Target,
    rows: pa.Table,
    keys: pa.Table,
    unit: LoadUnit,
    base: str,
    *,
    throttle: Throttle | None = None,
    batch_rows: int = BATCH_ROWS,
) -> LoadReport:
    """Load ``unit``'s version as the changes from version ``base``: ``rows``, its rows of the
    changed keys, and ``keys``, every changed key (the target's key columns). Raises
    ``NotAtBase`` when the warehouse does not hold exactly ``base``, before anything changed."""
    started = time.monotonic()
    if unit.partition is not None or not target.keys:
        raise ValueError(f"{unit.describe()}: a changes load needs a keyed, unpartitioned target")
    if set(keys.column_names) != set(target.keys):
        raise ValueError(f"{unit.describe()}: the changed keys must be the columns {target.keys}")
    check_merge_keys(rows, target.keys)
    if loaded_version(session, target, None) != base:
        raise NotAtBase(f"{target.warehouse_table} does not hold version {base}")
    table = target.warehouse_table
    ensure_table(session, target, warehouse_types.arrow_columns(rows.schema, session.dialect))
    create_table_if_missing(session, sql.ledger_table(table), sql.create_ledger(table))
    token = uuid.uuid4().hex[:8]
    staged, changed = sql.temp_table_name(table, token), sql.temp_table_name(table, f"k{token}")
    key_names = list(target.keys)
    dist = target.dist_key if target.dist_key in key_names else None
    names = rows.column_names
    session.execute(sql.create_temp_like(staged, table, names, session.dialect, target.dist_key))
    session.execute(sql.create_temp_like(changed, table, key_names, session.dialect, dist))
    try:
        session.stage(staged, rows, throttle, batch_rows)
        session.stage(changed, keys.select(key_names), throttle, batch_rows)
        _apply(session, target, unit, base, staged, changed, names, len(rows))
    finally:
        drop_quietly(session, staged)
        drop_quietly(session, changed)
    return reconcile(session, target, unit, len(rows), started, expected=unit.rows)


def _apply(
    session: LoadSession,
    target: Target,
    unit: LoadUnit,
    base: str,
    staged: str,
    changed: str,
    columns: list[str],
    rows: int,
) -> None:
    """The one transaction: the changed keys out, their new rows in, the ledger moved on."""
    table = target.warehouse_table
    statements = [
        sql.delete_matching(table, changed, target.keys),  # a key the version dropped goes too
        sql.insert_select(table, staged, columns),
        *sql.ledger_entry(
            table,
            None,
            unit.lake_table,
            unit.lake_version,
            rows,
            datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            unit.run_id,
        ),
    ]
    session.execute(sql.BEGIN)
    try:
        lock = sql.lock_table(table, session.dialect)
        if lock:
            session.execute(lock)
        if loaded_version(session, target, None) != base:  # another load won the lock first
            raise NotAtBase(f"{table} no longer holds version {base}")
        for statement in statements:
            session.execute(statement)
        session.execute(sql.COMMIT)
    except BaseException:
        with contextlib.suppress(Exception):  # see warehouse_load._apply
            session.execute(sql.ROLLBACK)
        raise
