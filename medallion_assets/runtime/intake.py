"""Landing a source's new raw objects: download, check, set aside the corrupt, skip copies.

Every new or changed object of a listing lands in the local landing folder and gets a manifest
entry. Three outcomes:

- readable: it decoded in the source's format and encoding and its columns can be columns;
  the bronze table is rebuilt from every readable entry;
- quarantined (``"quarantined": reason``): it cannot be read (see ``raw_files``); the rest of
  the batch ingests, the object is named in the log and the run's metadata, and it stays out
  until a new upload under its key (a new ETag) replaces it. Setting one object aside instead
  of failing the step is what a data engineer expects of a feed: one vendor's broken file
  must not hold back the others, and nothing is lost (the object stays in S3 and landing);
- a duplicate (``"duplicate_of": key``): its content equals an object already ingested under
  another key of the same manifest (the listing's ETag and size, else the SHA-256 of the
  download), so its rows would be there twice. A copy under a new key is the usual cause.

Duplicates are looked for within one manifest (a source, or one day of a daily source): a day
is rebuilt from its own objects, and two days delivering identical files (a header-only CSV of
an empty day) are each that day's data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from medallion_assets.catalog.models import Source
from medallion_assets.control.store import iso_utc
from medallion_assets.runtime.raw_files import (
    CorruptObject,
    columns_problem,
    file_columns,
    land,
    sha256_of,
)

if TYPE_CHECKING:
    from medallion_assets.io.object_store import S3Object


# One object's manifest entry, as stored (JSON): etag, size, ingested_at, batch_id, uri, and
# sha256/landing when landed, quarantined or duplicate_of when set aside.
Entry = dict[str, Any]


def readable(entry: Mapping[str, Any]) -> bool:
    """Whether a manifest entry's landed file is part of the table.

    >>> readable({"etag": "e1"}), readable({"etag": "e2", "duplicate_of": "a.jsonl"})
    (True, False)
    """
    return "quarantined" not in entry and "duplicate_of" not in entry


def readable_entries(manifest: Mapping[str, Entry]) -> dict[str, Entry]:
    return {k: e for k, e in manifest.items() if readable(e)}


@dataclass(frozen=True)
class Intake:
    """What landing a batch did: the updated manifest, and per key what was set aside."""

    manifest: dict[str, Entry]
    landed: dict[str, list[str] | None] = field(default_factory=dict)  # key -> its columns
    quarantined: dict[str, str] = field(default_factory=dict)  # key -> why
    duplicates: dict[str, str] = field(default_factory=dict)  # key -> what it copies

    def metadata(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "quarantined_objects": len(self.quarantined),
            "duplicate_objects": len(self.duplicates),
        }
        if self.quarantined:
            data["quarantined_object_keys"] = [
                {"key": k, "reason": r} for k, r in self.quarantined.items()
            ]
        if self.duplicates:
            data["duplicate_object_keys"] = [
                {"key": k, "same_as": o} for k, o in self.duplicates.items()
            ]
        return data

    def report(self, bucket: str, warn: Callable[[str], None]) -> None:
        """Name every object set aside or skipped: both mean a producer did something wrong."""
        for key, why in self.quarantined.items():
            warn(f"quarantined s3://{bucket}/{key} as a whole, not ingested: {why}")
        for key, other in self.duplicates.items():
            when = self.manifest.get(other, {}).get("ingested_at")
            at = iso_utc(float(when)) if when is not None else "earlier"
            warn(f"skipped {key}: same content as {other} ingested {at}")


def require_readable(
    table: str, manifest: Mapping[str, Entry], bucket_uri: str, prefix: str
) -> None:
    """Fail when no object of ``manifest`` can be read: CorruptObject naming the corrupt ones,
    or FileNotFoundError when there are none at all."""
    if readable_entries(manifest):
        return
    corrupt = {bucket_uri + k: e["quarantined"] for k, e in manifest.items() if "quarantined" in e}
    if corrupt:
        first = next(iter(corrupt))
        raise CorruptObject(first, corrupt[first], corrupt)
    raise FileNotFoundError(
        f"{table}: no objects under {bucket_uri}{prefix}; nothing to ingest (check the "
        "source's bucket and prefix, or the partition date)"
    )


class Downloader(Protocol):
    """What landing needs from the (throttled) S3 resource, e.g. ``ThrottledS3``."""

    def download(self, bucket: str, key: str, destination: Path) -> object: ...


@dataclass(frozen=True)
class Batch:
    """One batch to land: the new objects (primary key -> listed object) of one manifest."""

    store: Downloader
    bucket: str
    source: Source
    landing: Path
    run_id: str
    known_columns: tuple[str, ...]  # declared + evolved


def new_objects(
    listed: Mapping[str, S3Object], manifest: Mapping[str, Entry]
) -> dict[str, S3Object]:
    """The listed objects whose key is new or whose content changed (ETag), plus the skipped
    copies of those: their original is being replaced, so they are looked at again.

    >>> from medallion_assets.io.object_store import S3Object
    >>> listed = {k: S3Object("raw", k, etag, 10) for k, etag in
    ...           [("a.jsonl", "new"), ("b.jsonl", "same"), ("c.jsonl", "copy")]}
    >>> manifest = {"a.jsonl": {"etag": "old"}, "b.jsonl": {"etag": "same"},
    ...             "c.jsonl": {"etag": "copy", "duplicate_of": "a.jsonl"}}
    >>> sorted(new_objects(listed, manifest))
    ['a.jsonl', 'c.jsonl']
    """
    fresh = {k: o for k, o in listed.items() if manifest.get(k, {}).get("etag") != o.etag}
    copies = {k: o for k, o in listed.items() if manifest.get(k, {}).get("duplicate_of") in fresh}
    return {**fresh, **copies}


def land_batch(
    batch: Batch, fresh: Mapping[str, S3Object], manifest: Mapping[str, Entry]
) -> Intake:
    """Download and check each object of ``fresh`` (sorted by key: the first of two equal new
    objects is the one ingested), returning the manifest with their entries."""
    updated = dict(manifest)
    by_etag = {
        (e.get("etag"), e.get("size")): k
        for k, e in manifest.items()
        if readable(e) and k not in fresh
    }
    by_content = _content_index(updated, exclude=fresh)
    intake = Intake(updated)
    now = time.time()
    for key in sorted(fresh):
        obj, columns = fresh[key], None
        entry: Entry = {
            "etag": obj.etag,
            "size": obj.size,
            "ingested_at": now,
            "batch_id": batch.run_id,
            "uri": f"s3://{batch.bucket}/{obj.key}",
        }
        same = by_etag.get((obj.etag, obj.size))  # equal ETag and size: no download needed
        if same is None:
            destination = batch.landing / key
            batch.store.download(batch.bucket, obj.key, destination)
            digest, problem = land(destination, batch.source)
            entry.update(sha256=digest, landing=str(destination))
            if problem is None:
                problem, columns = _columns(destination, batch)
            if problem is not None:
                updated[key] = {**entry, "quarantined": problem}
                intake.quarantined[key] = problem
                continue
            same = by_content.get(digest)
            if same is not None:
                destination.unlink(missing_ok=True)
                entry.pop("landing")
        if same is not None and same != key:
            updated[key] = {**entry, "duplicate_of": same}
            intake.duplicates[key] = same
            continue
        updated[key] = entry
        intake.landed[key] = columns
        by_etag[(obj.etag, obj.size)] = key
        by_content[entry["sha256"]] = key
    return intake


def _columns(path: Path, batch: Batch) -> tuple[str | None, list[str] | None]:
    """(why the file's columns cannot be taken or None, its columns)."""
    try:
        columns = file_columns(path, batch.source)
    except ValueError as error:
        return str(error), None
    if columns is None:
        return None, None
    return columns_problem(columns, batch.known_columns), columns


def _content_index(manifest: dict[str, Entry], exclude: Mapping[str, object]) -> dict[str, str]:
    """SHA-256 -> key of the readable entries; entries landed before hashes were kept get one
    from their landed file (written back into ``manifest``)."""
    index: dict[str, str] = {}
    for key, entry in sorted(manifest.items()):
        if key in exclude or not readable(entry):
            continue
        digest = entry.get("sha256")
        if digest is None and Path(entry.get("landing", "")).is_file():
            digest = sha256_of(Path(entry["landing"]))
            manifest[key] = {**entry, "sha256": digest}
        if digest is not None:
            index.setdefault(digest, key)
    return index
