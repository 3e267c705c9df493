"""A table whose current metadata file is gone: said as such (not as a catalog that is down),
and repaired by pointing the catalog at the newest metadata file of the table still there.

Every commit writes a new ``NNNNN-<uuid>.metadata.json`` beside the previous ones and moves the
catalog's pointer to it; when the file the pointer names is deleted (a cleanup gone wrong,
another engine's expiry), the table cannot be loaded although the lake holds it one commit
earlier. ``repair`` finds that file (the highest sequence number that parses) and registers the
table at it again. Pyiceberg only, no JVM; a JDBC (SQL) catalog, whose pointer medallion can
read without loading the table.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from medallion_assets.errors import PermanentError, said
from medallion_assets.lake.orphans import files_under

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

_METADATA_FILE = re.compile(r"[^\s'\"]+\.metadata\.json")
_MISSING = re.compile(r"No such file|NoSuchKey|NO_SUCH_KEY|Not ?Found|does not exist", re.I)


class LostMetadata(PermanentError):
    """The catalog points at a metadata file that is gone; retrying cannot bring it back."""

    error_code = "LAKE_METADATA_LOST"
    fix = "the next run rebuilds what changed since the commit the table is repaired to"


class RepairNotPossible(ValueError):
    """Nothing the repair can do; the message says why and what to do instead."""


def lost_metadata(table: str, error: BaseException) -> LostMetadata | None:
    """The ``LostMetadata`` of ``table`` when ``error`` (loading it) says its current metadata
    file is gone, else None."""
    text = said(error)
    found = _METADATA_FILE.search(text)
    if found is None or not _MISSING.search(text):
        return None
    return LostMetadata(
        f"its current metadata file {found.group(0)} is gone (the lake's catalog still points "
        f"at it): run `medallion table repair {table} --reason ...` to point the catalog at the "
        "newest one still there"
    )


def repair(catalog: Catalog, table: str) -> tuple[str, str]:
    """Point ``catalog`` at ``table``'s newest metadata file that is there and reads; returns
    (the file it pointed at, the one it points at now). ``RepairNotPossible`` when the table
    loads as it is, the catalog is not a JDBC one, or no metadata file of it reads."""
    # pyiceberg and SQLAlchemy: loaded only when the lake is read without Spark
    from pyiceberg.catalog.sql import IcebergTables, SqlCatalog
    from sqlalchemy.orm import Session

    if not isinstance(catalog, SqlCatalog):
        raise RepairNotPossible(
            f"{table}: repair reads the pointer of a JDBC (SQL) catalog; on this one, register "
            "the table's newest metadata file with the catalog's own tools (Spark SQL: CALL "
            "lake.system.register_table('layer.table', '<metadata file>'))"
        )
    namespace, name = table.split(".", 1)
    with Session(catalog.engine) as session:
        row = (
            session.query(IcebergTables)
            .filter(
                IcebergTables.catalog_name == catalog.name,
                IcebergTables.table_namespace == namespace,
                IcebergTables.table_name == name,
            )
            .one_or_none()
        )
        pointed = None if row is None else str(row.metadata_location)
    if pointed is None:
        raise RepairNotPossible(f"the lake's catalog has no table {table}: nothing to repair")
    newest = _newest_readable(catalog, pointed)
    if newest == pointed:
        raise RepairNotPossible(f"{table} loads as it is ({pointed}): nothing to repair")
    catalog.drop_table(table)  # the catalog's row only: no file is touched
    catalog.register_table(table, newest)
    return pointed, newest


def _sequence(name: str) -> int | None:
    """A metadata file's sequence number (``00004-<uuid>.metadata.json`` -> 4), else None.

    >>> _sequence("00004-0a1b.metadata.json"), _sequence("v3.metadata.json")
    (4, None)
    """
    found = re.match(r"(\d+)-", name)
    return int(found.group(1)) if found else None


def _newest_readable(catalog: Catalog, pointed: str) -> str:
    """``pointed`` when it reads, else the newest metadata file beside it (by sequence number,
    none newer than it) that reads."""
    # pyiceberg: loaded only when the lake is read without Spark
    from pyiceberg.io import load_file_io
    from pyiceberg.serializers import FromInputFile

    io = load_file_io(catalog.properties, pointed)
    folder, _, own = pointed.rpartition("/")
    try:
        _, listed = files_under(io, folder)
    except TypeError as error:
        raise RepairNotPossible(str(error)) from None
    ceiling = _sequence(own)
    names = sorted(i.base_name for i in listed if i.base_name.endswith(".metadata.json"))
    older = [
        n
        for n in reversed(names)
        if n != own and not (ceiling is not None and (_sequence(n) or -1) > ceiling)
    ]  # newest first; none written after the pointer's (a commit that never happened)
    for base in [own, *older]:
        candidate = f"{folder}/{base}"
        try:
            FromInputFile.table_metadata(io.new_input(candidate))
        except Exception:  # gone, truncated or foreign: the one before it, then
            continue
        return candidate
    raise RepairNotPossible(
        f"no metadata file in {folder} reads: the table cannot be brought back from the lake; "
        "rebuild it from raw"
    )


__all__ = ["LostMetadata", "RepairNotPossible", "lost_metadata", "repair"]
