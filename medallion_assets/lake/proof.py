"""Proof that a table's current version is still what medallion published, before a run keeps
it as "unchanged": the catalog's code version and inputs say what built it, not that nobody
touched it since. Another engine sharing the catalog may have altered the schema (a column
dropped, renamed or added) or the files (a data file deleted) without a commit of medallion's.
A few requests per table: the metadata (loaded already), the manifest list, the manifests and
the existence of up to ``FILES_CHECKED`` data files; ``medallion doctor --deep`` checks every
data file. Pyiceberg only, no JVM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from medallion_assets.lake.env_refs import env_of_ref
from medallion_assets.lake.versions import in_force, written_fields

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot
    from pyiceberg.types import NestedField

FILES_CHECKED = 8


def doubt(
    loaded: Table, partition: str | None, every_file: bool = False, env: str | None = None
) -> str:
    """Why the version in force (of ``partition``, for a daily table; in environment ``env``)
    may no longer be what medallion published, or "" when nothing says so."""
    snapshot = in_force(loaded, partition, env)
    if snapshot is None:
        return ""
    changed = _schema_change(loaded, snapshot, daily=partition is not None)
    if changed:
        return changed
    return _missing_file(loaded, snapshot, None if every_file else FILES_CHECKED)


def _schema_change(loaded: Table, snapshot: Snapshot, daily: bool) -> str:
    """The schema's change since ``snapshot`` was written. A daily table's other days may add
    columns (their own builds evolve the table); a column dropped, renamed or retyped is never
    medallion's."""
    if snapshot.schema_id is None:
        return ""
    current = loaded.schema()
    if current.schema_id == snapshot.schema_id:
        return ""
    written = loaded.schemas().get(snapshot.schema_id)
    if written is None:
        return f"its schema {snapshot.schema_id} is gone from the table's metadata"
    lost = _lost_fields(written, current)
    if lost:
        return f"its schema was changed outside medallion: {lost}"
    before = _by_id(written)
    # Columns a dev environment's write added (its branch's schema has them) are medallion's.
    envs = [r.snapshot_id for name, r in loaded.metadata.refs.items() if env_of_ref(name)]
    before |= written_fields(loaded, envs)
    added = sorted(f.name for f in current.fields if f.field_id not in before)
    if added and not daily:
        return f"its schema was changed outside medallion: column(s) {', '.join(added)} added"
    return ""


def _lost_fields(written: Schema, current: Schema) -> str:
    """The top-level columns of ``written`` that ``current`` dropped, renamed or retyped."""
    changes = []
    now_by_id = _by_id(current)
    for field in written.fields:
        now = now_by_id.get(field.field_id)
        if now is None:
            changes.append(f"column {field.name} dropped")
        elif now.name != field.name:
            changes.append(f"column {field.name} renamed to {now.name}")
        elif str(now.field_type) != str(field.field_type):
            changes.append(
                f"column {field.name} changed from {field.field_type} to {now.field_type}"
            )
    return ", ".join(changes)


def _by_id(schema: Schema) -> dict[int, NestedField]:
    return {field.field_id: field for field in schema.fields}


def _missing_file(loaded: Table, snapshot: Snapshot, limit: int | None) -> str:
    """A manifest list, manifest or data file of ``snapshot`` that cannot be read or is gone
    (the newest data files first, ``limit`` of them; all with None)."""
    io = loaded.io
    try:
        paths = []
        for manifest in snapshot.manifests(io):
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=True):
                paths.append(entry.data_file.file_path)
        checked = paths if limit is None else paths[-limit:]
        for path in checked:
            if not io.new_input(path).exists():
                return f"its data file {path} is gone"
    except (OSError, ValueError) as error:
        said = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"its snapshot's files cannot be read ({said})"
    return ""
