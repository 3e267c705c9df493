"""Which system a failure happened in: the lake's storage, a raw source, the lake's catalog, the
warehouse or Spark itself. Healing needs it because the same words mean different things: a
``NoSuchBucket`` in a raw bucket is a source outage (reroute to a replica), in the lake's
bucket it is the lake's own storage, which no replica replaces; marking sources down for it
routes healthy tables away and leaves them unbuilt. Pure: the places come from the catalog and
the settings, the failure from its exception chain.

>>> places = Places("s3a://lake/prod", frozenset({"raw", "raw-replica"}))
>>> system_of((), "getFileStatus on s3a://lake/prod/bronze/orders: NoSuchBucket", places)
'lake'
>>> system_of((), "s3://raw/orders/ does not exist (NoSuchBucket)", places)
'source'
>>> system_of(("LakeCatalogError",), "the lake's catalog x cannot be used", places)
'catalog'
>>> system_of((), "Connection reset", places)
''
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LAKE, SOURCE, CATALOG, WAREHOUSE, SPARK = "lake", "source", "catalog", "warehouse", "spark"

_S3_LOCATION = re.compile(
    r"\bs3[an]?://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?P<key>/[^\s'\"(),;]*)?"
)
_FILE_LOCATION = re.compile(r"(?:\bfile:)?(?P<path>/[^\s'\"(),;:]+)")
# The JVM's and Spark's words for running out of memory: the driver's or an executor's heap.
OUT_OF_MEMORY = re.compile(
    r"OutOfMemoryError|Java heap space|GC overhead limit exceeded|Not enough memory to build "
    r"and broadcast|Unable to acquire \d+ bytes of memory|Container killed .* memory"
)
_WAREHOUSE_TYPES = ("psycopg.", "redshift_connector.", "_duckdb.", "duckdb.")


@dataclass(frozen=True)
class Places:
    """Where the project's systems keep their data: the lake's warehouse location
    (``s3a://bucket/prefix`` or ``file:/folder``), the raw buckets (sources and replicas) and,
    when raw objects are a local folder, that folder."""

    lake: str
    raw_buckets: frozenset[str]
    raw_folder: str = ""


def system_of(exception_types: tuple[str, ...], message: str, places: Places) -> str:
    """The system the failure names, or "" when it names none, or more than one."""
    if "LakeCatalogError" in exception_types:
        return CATALOG
    if any(t.startswith(_WAREHOUSE_TYPES) for t in exception_types):
        return WAREHOUSE
    if OUT_OF_MEMORY.search(message):
        return SPARK
    found = set(_s3_systems(message, places)) | set(_folder_systems(message, places))
    return found.pop() if len(found) == 1 else ""


def _s3_systems(message: str, places: Places) -> list[str]:
    lake = _S3_LOCATION.match(places.lake.replace("s3a://", "s3://", 1))
    lake_bucket = lake.group("bucket") if lake else None
    lake_prefix = (lake.group("key") or "") if lake else ""
    found = []
    for match in _S3_LOCATION.finditer(message):
        bucket, key = match.group("bucket"), match.group("key") or "/"
        in_lake = bucket == lake_bucket and (key + "/").startswith(lake_prefix.rstrip("/") + "/")
        if in_lake or (bucket == lake_bucket and bucket not in places.raw_buckets):
            found.append(LAKE)
        elif bucket in places.raw_buckets:
            found.append(SOURCE)
    return found


def _folder_systems(message: str, places: Places) -> list[str]:
    lake = places.lake.removeprefix("file:") if places.lake.startswith("file:") else ""
    found = []
    for match in _FILE_LOCATION.finditer(message):
        path = match.group("path")
        if lake and (path + "/").startswith(lake.rstrip("/") + "/"):
            found.append(LAKE)
        elif places.raw_folder and (path + "/").startswith(places.raw_folder.rstrip("/") + "/"):
            found.append(SOURCE)
    return found
