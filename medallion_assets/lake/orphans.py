"""Files under a table's location that no snapshot, manifest or metadata file of the table
refers to: what builds killed before their commit wrote, and what other engines left. Found by
listing the location (pyarrow's filesystem of the table's FileIO: a folder or an S3 prefix) and
reading every snapshot's manifest list and manifests, never from the catalog alone. Only files
older than a safety age count: a build in progress writes its files before it commits them.
Pyiceberg only, no JVM.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from pyarrow.fs import FileInfo
    from pyiceberg.io import FileIO
    from pyiceberg.table import Table

# As Spark's remove_orphan_files: a file younger than this may be a build's, not yet committed.
SAFE_AGE_S = 3 * 24 * 3600.0


@dataclass(frozen=True)
class Orphan:
    path: str  # as the table's location spells it (file:/..., s3://bucket/...)
    size: int
    age_s: float


def orphan_files(loaded: Table, older_than_s: float = SAFE_AGE_S) -> list[Orphan]:
    """The files under the table's location nothing of the table refers to, older than
    ``older_than_s``, by path."""
    referenced = {_key(p) for p in referenced_files(loaded)}
    scheme, listed = files_under(loaded.io, loaded.metadata.location, recursive=True)
    now = time.time()
    found = []
    for info in listed:
        if _key(info.path) in referenced:
            continue
        age = now - info.mtime.timestamp() if info.mtime is not None else float("inf")
        if age >= older_than_s:
            found.append(Orphan(_spelled(scheme, info.path), info.size or 0, age))
    return sorted(found, key=lambda o: o.path)


def referenced_files(loaded: Table) -> set[str]:
    """Every file the table's metadata reaches: its metadata files (the current one and those
    of its log), each snapshot's manifest list, manifests and data and delete files (deleted
    entries too: an older snapshot still reads them), and its statistics files."""
    io = loaded.io
    metadata = loaded.metadata
    files = {loaded.metadata_location, *(e.metadata_file for e in metadata.metadata_log)}
    files.update(s.statistics_path for s in metadata.statistics)
    files.update(s.statistics_path for s in metadata.partition_statistics)
    for snapshot in metadata.snapshots:
        files.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(io):
            if manifest.manifest_path in files:
                continue  # shared with a snapshot read already: its entries are in
            files.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(io, discard_deleted=False):
                files.add(entry.data_file.file_path)
    return files


def files_under(io: FileIO, location: str, recursive: bool = False) -> tuple[str, list[FileInfo]]:
    """(the location's scheme, the files under it) as the table's FileIO lists them: a local
    folder or an S3 prefix, through pyarrow's filesystem for it."""
    # pyarrow's filesystems: loaded only when the lake is read without Spark
    from pyarrow.fs import FileSelector, FileType
    from pyiceberg.io.pyarrow import PyArrowFileIO

    if not isinstance(io, PyArrowFileIO):
        raise TypeError(f"listing {location} needs pyarrow's FileIO, not {type(io).__name__}")
    scheme, netloc, path = io.parse_location(location, io.properties)
    selector = FileSelector(path, recursive=recursive, allow_not_found=True)
    listed = io.fs_by_scheme(scheme, netloc).get_file_info(selector)
    return scheme, [info for info in listed if info.type == FileType.File]


def remove(loaded: Table, orphans: list[Orphan]) -> int:
    """Delete ``orphans`` (from ``orphan_files``); returns the bytes freed."""
    for orphan in orphans:
        loaded.io.delete(orphan.path)
    return sum(o.size for o in orphans)


def _key(path: str) -> str:
    """A path as one spelling, without its scheme (and a local one without ``file://``).

    >>> _key("file:/lake/t/data/a.parquet"), _key("file:///lake/t/data/a.parquet")
    ('/lake/t/data/a.parquet', '/lake/t/data/a.parquet')
    >>> _key("s3a://bucket/t/a.parquet"), _key("bucket/t/a.parquet")
    ('bucket/t/a.parquet', 'bucket/t/a.parquet')
    """
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else path
    return f"{parsed.netloc}{parsed.path}"


def _spelled(scheme: str, listed: str) -> str:
    return f"file:{listed}" if scheme in ("", "file") else f"{scheme}://{listed}"


__all__ = ["SAFE_AGE_S", "Orphan", "files_under", "orphan_files", "referenced_files", "remove"]
