"""Taking in a source's new raw objects: check them, set aside the corrupt, skip copies.

Every new or changed object of a listing is inspected where Spark reads it (``raw_read``) and
gets a manifest entry. Three outcomes:

- readable: it decoded in the source's format and encoding and its columns can be columns;
  its rows go into the bronze table;
- quarantined (``"quarantined": reason``): it cannot be read (see ``raw_files``); the rest of
  the batch ingests, the object is named in the log and the run's metadata, and it stays out
  until a new upload under its key (a new ETag) replaces it. Setting one object aside instead
  of failing the step is what a data engineer expects of a feed: one vendor's broken file
  must not hold back the others, and nothing is lost (the object stays in S3);
- a duplicate (``"duplicate_of": key``): its content equals an object already ingested under
  another key of the same manifest (the listing's ETag and size, else the SHA-256 of its
  bytes), so its rows would be there twice. A copy under a new key is the usual cause.

Duplicates are looked for within one manifest (a source, or one day of a daily source): a day
is rebuilt from its own objects, and two days delivering identical files (a header-only CSV of
an empty day) are each that day's data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from medallion_assets.control.store import iso_utc
from medallion_assets.runtime.ingest.raw_files import CorruptObject, Inspection, columns_problem

if TYPE_CHECKING:
    from medallion_assets.io.object_store import S3Object


# One object's manifest entry, as stored (JSON): etag, size, ingested_at, batch_id, uri, sha256
# when read, columns when it carries names, quarantined or duplicate_of when set aside.
Entry = dict[str, Any]


def readable(entry: Mapping[str, Any]) -> bool:
    """Whether a manifest entry's object is part of the table.

    >>> readable({"etag": "e1"}), readable({"etag": "e2", "duplicate_of": "a.jsonl"})
    (True, False)
    """
    return "quarantined" not in entry and "duplicate_of" not in entry


def readable_entries(manifest: Mapping[str, Entry]) -> dict[str, Entry]:
    return {k: e for k, e in manifest.items() if readable(e)}


@dataclass(frozen=True)
class Intake:
    """What taking in a batch did: the updated manifest, and per key what was set aside."""

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


@dataclass(frozen=True)
class Batch:
    """One batch to take in: the new objects (primary key -> listed object) of one manifest."""

    bucket: str  # where the objects are read from (the primary, or the route's replica)
    run_id: str
    known_columns: tuple[str, ...]  # declared + evolved
    # declared ``nullable: false``: an object lacks none and holds a value in each (else it is
    # set aside); empty when the source quarantines such rows instead
    required_columns: tuple[str, ...] = ()


# Inspects objects (primary key -> listed object) where their bytes are read: key -> its
# ``Inspection``. See ``raw_read``.
Inspector = Callable[[Mapping[str, "S3Object"]], Mapping[str, Inspection]]


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


def lacks_required(
    columns: list[str], required: tuple[str, ...], valueless: list[str] | None = None
) -> str | None:
    """Why an object whose records carry ``columns`` (``valueless``: those with no value in
    any record) breaks the source's contract: it lacks a column declared ``nullable: false``,
    or holds no value in it (every row would land NULL there). Names compare as Spark does,
    without case.

    >>> lacks_required(["id", "Amount"], ("id", "amount", "status"))
    'it lacks the column(s) status that sources.yaml declares nullable: false'
    >>> print(lacks_required(["id", "status"], ("id", "status"), ["Status"]))
    its column(s) status hold no value in any record, but sources.yaml declares them ...
    """
    have = {c.lower() for c in columns}
    missing = [c for c in required if c.lower() not in have]
    if missing:
        return (
            f"it lacks the column(s) {', '.join(missing)} that sources.yaml declares "
            "nullable: false"
        )
    empty = {c.lower() for c in valueless or ()}
    unfilled = [c for c in required if c.lower() in empty]
    if unfilled:
        return (
            f"its column(s) {', '.join(unfilled)} hold no value in any record, but "
            "sources.yaml declares them nullable: false"
        )
    return None


def inspect_batch(
    batch: Batch,
    fresh: Mapping[str, S3Object],
    manifest: Mapping[str, Entry],
    inspect: Inspector,
) -> Intake:
    """Check each object of ``fresh`` (sorted by key: the first of two equal new objects is
    the one ingested), returning the manifest with their entries. An object equal by ETag and
    size to an ingested one is a copy without reading it; the others are inspected in one
    pass where their bytes are."""
    updated = dict(manifest)
    by_etag = {
        (e.get("etag"), e.get("size")): k
        for k, e in manifest.items()
        if readable(e) and k not in fresh
    }
    by_content: dict[str, str] = {}  # SHA-256 -> the first key by name holding that content
    for k, e in sorted(manifest.items()):
        if readable(e) and k not in fresh and "sha256" in e:
            by_content.setdefault(e["sha256"], k)
    unseen = {k: o for k, o in fresh.items() if (o.etag, o.size) not in by_etag}
    inspected = inspect(unseen) if unseen else {}
    intake = Intake(updated)
    now = time.time()
    for key in sorted(fresh):
        obj = fresh[key]
        entry: Entry = {
            "etag": obj.etag,
            "size": obj.size,
            "ingested_at": now,
            "batch_id": batch.run_id,
            "uri": f"s3://{batch.bucket}/{obj.key}",
        }
        same = by_etag.get((obj.etag, obj.size))  # equal ETag and size: a copy, unread
        columns = None
        if same is None:
            digest, problem, columns, valueless = inspected[key]
            entry["sha256"] = digest
            if problem is None and columns is not None:
                problem = columns_problem(columns, batch.known_columns) or lacks_required(
                    columns, batch.required_columns, valueless
                )
                entry["columns"] = columns
            if problem is not None:
                updated[key] = {**entry, "quarantined": problem}
                intake.quarantined[key] = problem
                continue
            same = by_content.get(digest)
        if same is not None and same != key:
            updated[key] = {**entry, "duplicate_of": same}
            intake.duplicates[key] = same
            continue
        updated[key] = entry
        intake.landed[key] = columns
        by_etag[(obj.etag, obj.size)] = key
        if "sha256" in entry:
            by_content.setdefault(entry["sha256"], key)
    return intake
