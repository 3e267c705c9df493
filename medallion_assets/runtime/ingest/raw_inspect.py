"""What each new raw object is, before it is read: its content hash, whether it decodes strictly,
the columns it carries and those without a value (``raw_files.inspect_path``).

One Spark job over the new objects' paths runs the inspection on the executors, each reading
its object a few MB at a time; only the small results come back to the driver, so neither its
disk nor its network bounds an ingest. A batch of at most ``DRIVER_INSPECTS`` bytes (an hourly
object or two) is inspected on the driver instead: its bytes take milliseconds there, while a
Spark job with Python workers takes seconds to start.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from pyspark.sql import types as T

from medallion_assets.catalog.sources import Source
from medallion_assets.runtime.ingest import raw_files
from medallion_assets.runtime.ingest.raw_files import Inspection
from medallion_assets.runtime.ingest.raw_open import RawObjectUnreadable
from medallion_assets.runtime.ingest.raw_read import reported, s3_endpoint, ship_by_value

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DRIVER_INSPECTS = 16 * 1024 * 1024  # a batch this small is inspected on the driver


def inspect_objects(
    spark: SparkSession, source: Source, sizes: Mapping[str, int]
) -> dict[str, Inspection]:
    """path -> its ``Inspection`` (SHA-256, why it cannot be read, its columns and those without
    a value), computed where the bytes are read: on the driver for a small batch, else by the
    executors (``sizes``: path -> the listed size). An empty object has no bytes to move
    (Spark skips it): it is inspected here."""
    fmt, header, encoding = source.format, source.csv_header, source.encoding
    found = {p: raw_files.inspect(b"", fmt, encoding, header) for p, n in sizes.items() if n == 0}
    paths = [p for p in sizes if p not in found]
    if not paths:
        return found

    s3 = s3_endpoint(spark)
    if sum(sizes[p] for p in paths) <= DRIVER_INSPECTS:
        inspected = raw_files.inspected
        results = {p: inspected(reported(p), fmt, encoding, header, s3) for p in paths}
    else:
        results = _inspected_by_executors(spark, paths, fmt, encoding, header, s3)
    unreadable = {}
    for path, found_here in results.items():
        if found_here is None:
            continue  # gone since the listing
        if found_here[4] is not None:
            unreadable[path] = found_here[4]
            continue
        sha256, problem, columns, valueless, _ = found_here
        assert sha256 is not None, f"{path}: an object read has its hash"
        found[path] = Inspection(
            sha256,
            problem,
            None if columns is None else list(columns),
            None if valueless is None else list(valueless),
        )
    if unreadable:
        first = min(unreadable)
        raise RawObjectUnreadable(
            f"{len(unreadable)} raw object(s) could not be read, first {_uri(first)}: "
            f"{unreadable[first]}"
        )
    gone = [reported(p) for p in paths if p not in found]
    if gone:
        raise FileNotFoundError(
            f"{len(gone)} listed object(s) could not be read, first {gone[0]}: deleted or "
            "replaced since the listing? Run again when the source is stable"
        )
    return found


def _inspected_by_executors(
    spark: SparkSession,
    paths: list[str],
    fmt: str,
    encoding: str,
    header: bool,
    s3: tuple[str, str] | None,
) -> dict[str, raw_files.Inspected]:
    """``raw_files.inspected`` of each path, run by the executors: one task per object."""
    ship_by_value()
    check = raw_files.inspected
    result = T.StructType(
        [
            T.StructField("sha256", T.StringType()),
            T.StructField("problem", T.StringType()),
            T.StructField("columns", T.ArrayType(T.StringType())),
            T.StructField("valueless", T.ArrayType(T.StringType())),
            T.StructField("unreadable", T.StringType()),
        ]
    )

    def inspected(where):  # type: ignore[no-untyped-def]  # hints would make it a pandas UDF
        return check(where, fmt, encoding, header, s3)

    # One task per object (a few at a time): each reads its object a few MB at a time, and
    # only the paths go to the executors and the small results come back.
    frame = spark.createDataFrame([(p, reported(p)) for p in paths], "path string, at string")
    frame = frame.repartition(min(len(paths), 10_000))
    rows = frame.select("path", F.udf(inspected, result)("at").alias("i")).collect()
    return {row.path: None if row.i is None else tuple(row.i) for row in rows}


def _uri(path: str) -> str:
    """A Spark path as the user knows it: ``s3://bucket/key`` or the local file."""
    return re.sub(r"^s3[an]://", "s3://", reported(path))
