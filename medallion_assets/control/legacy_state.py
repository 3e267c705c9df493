"""The runtime state an earlier version kept as JSON files under ``<lake>/_state``, moved into
the control store once.

Those versions wrote ``parallelism__<system>.json`` (a throttle cut), ``schema__<source>.json``
(evolved columns) and ``manifest__<source>[__<day>].json`` (an ingest manifest). The first
time a project's store is opened with the lake known (``ControlPlane.store``), each file is
copied into the store, never over a row the store already has, in one audited transaction;
then the folder is renamed ``_state.imported`` (kept for reference: nothing reads it). A crash
before the rename imports again next time, which changes nothing already imported.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from medallion_assets.control import schema
from medallion_assets.control.state import manifest_row
from medallion_assets.control.store import AuditEntry, iso_utc, utc_now

if TYPE_CHECKING:
    from sqlalchemy import Connection, Table

    from medallion_assets.control.store import ControlStore

LEGACY_FOLDER = "_state"
IMPORTED_FOLDER = "_state.imported"
_MANIFEST = re.compile(r"manifest__(?P<source>.+?)(?:__(?P<day>\d{4}-\d{2}-\d{2}))?")


def import_legacy_state(store: ControlStore, lake_root: Path) -> int:
    """Import ``<lake_root>/_state`` into ``store`` if it is there; returns the files imported
    (0 when there is no such folder: the usual case, one ``stat``)."""
    folder = lake_root / LEGACY_FOLDER
    if not folder.is_dir():
        return 0
    files = sorted(folder.glob("*.json"))
    with store.transaction() as db:
        imported = [path.name for path in files if _import_file(store, db, path)]
        store.append(
            db,
            AuditEntry(
                utc_now(),
                "state",
                "control store",
                f"imported {len(imported)} state file(s) of an earlier version from {folder}",
                details={"files": imported},
            ),
        )
    target = lake_root / IMPORTED_FOLDER
    if target.exists():
        target = lake_root / f"{IMPORTED_FOLDER}.{time.time_ns()}"
    # Another process may have imported the same files (nothing was overwritten) and won.
    with contextlib.suppress(FileNotFoundError):
        folder.rename(target)
    return len(imported)


def _import_file(store: ControlStore, db: Connection, path: Path) -> bool:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    if not isinstance(data, dict):
        return False
    name = path.stem
    if name.startswith("parallelism__"):
        system = name.removeprefix("parallelism__")
        row = {
            "system": system,
            "factor": float(data.get("factor", 1.0)),
            "since": float(data.get("since", 0.0)),
            "until": float(data.get("until", 0.0)),
            "reason": "imported from an earlier version's state",
            "run_id": "",
            "changed_at": iso_utc(float(data.get("since", 0.0))),
        }
        _insert_new(store, db, schema.throttle_cuts, [row])
        return True
    if name.startswith("schema__"):
        source = name.removeprefix("schema__")
        columns = [
            c
            for c in data.get("columns", ())
            # A NUL cannot be stored in PostgreSQL's text, and ingest ignores such a name anyway.
            if isinstance(c, dict) and "name" in c and "\x00" not in str(c["name"])
        ]
        table = schema.evolved_columns
        held = db.execute(
            select(table.c.name, table.c.position).where(table.c.source == source)
        ).all()
        names = {str(r[0]).lower() for r in held}
        first = max((int(r[1]) for r in held), default=-1) + 1  # after the store's own
        columns = [c for c in columns if str(c["name"]).lower() not in names]
        rows = [
            {
                "source": source,
                "name": str(c["name"]),
                "position": first + i,
                "type": str(c.get("type", "string")),
                "evolved_at": float(c.get("evolved_at", 0.0)),
                "run_id": str(c.get("run_id", "")),
                "files": json.dumps([str(f) for f in c.get("files", ())]),
            }
            for i, c in enumerate(columns)
        ]
        _insert_new(store, db, schema.evolved_columns, rows)
        return True
    match = _MANIFEST.fullmatch(name)
    if match is not None:
        rows = [
            manifest_row(match["source"], match["day"], key, entry)
            for key, entry in data.items()
            if isinstance(entry, Mapping)
        ]
        _insert_new(store, db, schema.ingest_manifest, rows)
        return True
    return False


def _insert_new(
    store: ControlStore, db: Connection, table: Table, rows: list[dict[str, Any]]
) -> None:
    """Insert the rows whose key the table does not hold yet (in one batch); the others are
    left alone."""
    if rows:
        db.execute(store.insert_new(table), rows)
