"""Where a source's objects are and what they are: its folder for a day (on the primary or a
replica), the day of an object's key, the objects gone from the source, the columns ingest needs,
and the manifest's digest."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from datetime import date
from typing import TYPE_CHECKING, Any

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.sources import Replica, Source
from medallion_assets.runtime.ingest.intake import (
    readable_entries,
)

if TYPE_CHECKING:
    pass


def source_of(catalog: Catalog, dataset: Dataset) -> tuple[str, Source]:
    raw = catalog.raw_sources(dataset)
    if len(raw) != 1:
        found = [f"raw.{name}" for name, _ in raw]
        raise ValueError(
            f"{dataset.name}: a bronze table reads exactly one raw source, got {found}"
        )
    return raw[0]


def source_prefix(source: Source, partition: str | None, replica: Replica | None = None) -> str:
    prefix = replica.prefix if replica is not None else source.prefix
    if partition and source.partition:
        return prefix + source.partition.replace("{date}", partition) + "/"
    return prefix


def primary_key(source: Source, replica: Replica | None, key: str) -> str:
    """The key an object read from ``replica`` has in the primary bucket."""
    return key if replica is None else source.prefix + key.removeprefix(replica.prefix)


def partition_of(source: Source, key: str) -> str | None:
    """The date a daily source's object key belongs to (``dt=2026-01-01``), or None."""
    if source.partition is None:
        return None
    pattern = re.escape(source.partition).replace(re.escape("{date}"), r"(\d{4}-\d{2}-\d{2})")
    match = re.search(pattern, key)
    return match.group(1) if match else None


class SourceUnavailable(Exception):
    """A source lists none of the objects ingested from it: an outage to report and retry, not
    a new truth to publish (bronze would lose their rows)."""


def missing_at_source(manifest: Mapping[str, Any], listed: Mapping[str, Any]) -> set[str]:
    """Keys of the readable objects ingested before that the source no longer lists.

    >>> sorted(missing_at_source({"a": {"etag": "1"}, "b": {"etag": "2"}}, {"a": object()}))
    ['b']
    """
    return {k for k in readable_entries(manifest) if k not in listed}


def required_columns(source: Source) -> tuple[str, ...]:
    """The columns every object of ``source`` must carry, with a value: those declared
    ``nullable: false``, unless the source quarantines the rows of such an object instead of
    setting it aside (``on_contract_break: quarantine_rows``)."""
    if source.on_contract_break == "quarantine_rows":
        return ()
    return tuple(c.name for c in source.columns if not c.nullable)


def odd_day(day: str, start: date, today: date) -> str | None:
    """Why a raw folder's day cannot be a partition of its daily table, or None when it can.

    >>> for d in ("2026-01-02", "2026-02-30", "2030-06-01", "2025-12-31"):
    ...     print(odd_day(d, date(2026, 1, 1), date(2026, 3, 1)))
    None
    not a day of the calendar
    in the future (today is 2026-03-01)
    before the table's partitions.start 2026-01-01
    """
    try:
        when = date.fromisoformat(day)
    except ValueError:
        return "not a day of the calendar"
    if when > today:
        return f"in the future (today is {today.isoformat()})"
    if when < start:
        return f"before the table's partitions.start {start.isoformat()}"
    return None


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    listing = "\n".join(f"{k}\t{v['etag']}" for k, v in sorted(manifest.items()))
    return hashlib.sha256(listing.encode()).hexdigest()[:16]
