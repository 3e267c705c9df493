"""Raw objects read where Spark runs: the executors inspect each new object's bytes and read
the source's format from the object's own path (``s3a://`` on S3, ``file:`` for the local
folder standing in for it). The driver lists, decides and records; no raw byte passes through
it, so neither its disk nor its network bounds an ingest.

- ``raw_inspect.inspect_objects``: what each new object is, before it is read.
- ``read_objects``: the readable objects in the source's format, with the declared (and
  evolved) schema, malformed records kept apart, and the ingestion columns. CSV is read as
  RFC 4180 (quoted fields may hold line breaks and doubled quotes) in the declared encoding;
  JSON lines in another encoding than UTF-8 are decoded on the executors and parsed by Spark.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import functions as F

from medallion_assets.catalog.base import java_charset
from medallion_assets.catalog.sources import FLOATING_TYPES, Source
from medallion_assets.runtime.ingest import raw_files, raw_open

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

CORRUPT = "_corrupt_record"
_UTF8 = ("utf-8", "utf-8-sig", "ascii")  # what Spark's own readers decode without help


@dataclass(frozen=True)
class RawFile:
    """One readable object: where Spark reads it and what ingest records beside its rows."""

    path: str  # a Hadoop path, glob characters escaped (``ObjectStore.spark_path``)
    uri: str  # s3://bucket/key, the ``_source_file`` column
    ingested_at: float
    batch_id: str
    columns: tuple[str, ...] | None = None  # a CSV file's header, in file order


def reported(path: str) -> str:
    """The path as Spark reports it for a file it read (``path`` without glob escapes).

    >>> reported("file:/lake/raw/a\\\\[1\\\\].csv")
    'file:/lake/raw/a[1].csv'
    """
    return re.sub(r"\\(.)", r"\1", path)


def s3_endpoint(spark: SparkSession) -> tuple[str, str] | None:
    """(URL, region) of the S3 API Spark's s3a speaks to, None for AWS's own."""
    url = spark.conf.get("spark.hadoop.fs.s3a.endpoint", None)
    if not url:
        return None
    region = spark.conf.get("spark.hadoop.fs.s3a.endpoint.region", None) or "us-east-1"
    return str(url), str(region)


@dataclass(frozen=True)
class RawRecords:
    """The records of a batch of objects: ``good`` rows with the ingestion columns, the
    ``quarantine`` of malformed ones, ``total`` read. Both frames read ``held``, the records
    held in Spark's cache: ``release`` it once they are written."""

    good: DataFrame
    quarantine: DataFrame
    total: int
    held: DataFrame | None = None

    def release(self) -> None:
        """Drop the held records from Spark's cache (else they stay for the driver's life, a
        whole source's records after a rebuild)."""
        if self.held is not None:
            self.held.unpersist()


def read_objects(
    spark: SparkSession,
    source: Source,
    files: Sequence[RawFile],
    evolved: Sequence[tuple[str, str]],
) -> RawRecords:
    """The records of ``files``. Columns are the declared ones plus those evolve_schema added;
    CSV files are read by their header's names, so a column added in the middle of a file
    does not shift the others."""

    columns = [(c.name, c.type) for c in source.columns] + list(evolved)
    ingestion = "_source_file string, _ingested_at timestamp, _batch_id string"
    if not files:  # every object deleted at a source whose deletes propagate
        good = spark.createDataFrame([], f"{_ddl(columns)}, {ingestion}")
        nothing = spark.createDataFrame([], f"`{CORRUPT}` string, {ingestion}, {REASON} string")
        return RawRecords(good, nothing, 0)
    # Text holds a decimal's digits as written: read as text, they are checked, then cast.
    text = source.format != "parquet"
    read = [(n, "string" if text and decimal_type(t) else t) for n, t in columns]
    paths = [f.path for f in files]
    wanted = [F.col(_quoted(n)) for n, _ in columns]
    if source.format == "parquet":
        no_corrupt = F.lit(None).cast("string").alias(CORRUPT)
        frame = spark.read.schema(_ddl(columns)).parquet(*paths)
        frame = frame.select(*wanted, no_corrupt, _file_of_row())
    elif source.format == "csv":
        frame = _read_csv(spark, source, files, read)
    elif codecs.lookup(source.encoding).name in _UTF8:
        reader = _permissive(spark.read.schema(f"{_ddl(read)}, `{CORRUPT}` string"))
        frame = reader.json(paths).select(*wanted, F.col(CORRUPT), _file_of_row())
    else:
        frame = _read_decoded_json(spark, source, paths, read)
    described = _files_frame(spark, files)
    frame = frame.join(F.broadcast(described), "_path")
    frame = frame.withColumn("_ingested_at", F.col("_ingested_epoch").cast("timestamp"))
    frame = frame.drop("_path", "_ingested_epoch")
    frame = frame.withColumn(REASON, _reason(source, columns)).cache()  # Spark needs a cache
    total = frame.count()  # to filter on the corrupt-record column
    bad = frame.where(F.col(REASON).isNotNull())
    raw_values = F.to_json(F.struct(*[F.col(_quoted(n)) for n, _ in read]))
    quarantine = bad.select(
        F.coalesce(F.col(CORRUPT), raw_values).alias(CORRUPT),
        "_source_file",
        "_ingested_at",
        "_batch_id",
        REASON,
    )
    good = frame.where(F.col(REASON).isNull()).select(
        *[_typed(n, t) if (n, t) not in read else F.col(_quoted(n)) for n, t in columns],
        "_source_file",
        "_ingested_at",
        "_batch_id",
    )
    return RawRecords(good, quarantine, total, frame)


def _files_frame(spark: SparkSession, files: Sequence[RawFile]) -> DataFrame:
    """Each file's name as Spark reads it, its URI, ingestion time and batch, made in the JVM
    from Arrow: from Python rows, the first job reading it starts Python workers (~1 s)."""
    table = pa.table(
        {
            "_path": pa.array([reported(f.path) for f in files], pa.string()),
            "_source_file": pa.array([f.uri for f in files], pa.string()),
            "_ingested_epoch": pa.array([float(f.ingested_at) for f in files], pa.float64()),
            "_batch_id": pa.array([f.batch_id for f in files], pa.string()),
        }
    )
    return spark.createDataFrame(table)


REASON = "_reason"  # why a quarantined record is there
_DECIMAL = re.compile(r"(?:decimal|dec|numeric)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?", re.I)


def decimal_type(kind: str) -> tuple[int, int] | None:
    """(precision, scale) of a Spark decimal type, or None for another type.

    >>> decimal_type("decimal(18,2)"), decimal_type("decimal"), decimal_type("double")
    ((18, 2), (10, 0), None)
    """
    match = _DECIMAL.fullmatch(kind.strip())
    if match is None:
        return None
    return int(match.group(1) or 10), int(match.group(2) or 0)


def _typed(name: str, kind: str) -> Column:
    """A decimal column read as text, as its declared type (rounded to its scale)."""

    return F.trim(F.col(_quoted(name))).try_cast(kind).alias(name)


def _reason(source: Source, columns: Sequence[tuple[str, str]]) -> Column:
    """Why a record is quarantined, or NULL for a good one: it is malformed (Spark could not
    parse it with the declared types: bad syntax, nested too deep, too long, a value of the
    wrong type), a column declared ``nullable: false`` is NULL, a value does not fit its
    decimal type (too many digits, or more decimal places unless the source rounds), or a
    double is NaN or infinite where the column does not allow it. Reasons name columns and
    types, never values (they are warned on the console)."""

    declared = {c.name: c for c in source.columns}
    checks: list[tuple[Column, str]] = []
    for name, kind in columns:
        value = F.col(_quoted(name))
        column = declared.get(name)
        if column is not None and not column.nullable:
            checks.append((value.isNull(), f"{name} is NULL (declared nullable: false)"))
        digits = decimal_type(kind) if source.format != "parquet" else None
        if digits is not None:
            p, s = digits
            text = F.trim(value)
            fits = text.try_cast(f"decimal({p},{s})")
            checks.append(
                (text.isNotNull() & text.try_cast("double").isNull(), f"{name} is not a number")
            )
            checks.append(
                (
                    text.try_cast("double").isNotNull() & fits.isNull(),
                    f"{name} does not fit {kind} (more than {p - s} digit(s) before the point)",
                )
            )
            wide = 38 - (p - s)
            if source.on_excess_scale == "quarantine" and wide > s:
                exact = text.try_cast(f"decimal(38,{wide})")
                checks.append(
                    (
                        fits.isNotNull() & exact.isNotNull() & (exact != fits),
                        f"{name} has more decimal places than {kind} keeps "
                        "(declare on_excess_scale: round to round it)",
                    )
                )
        if kind in FLOATING_TYPES and not (column is not None and column.allow_nan):
            infinite = value.isin(float("inf"), float("-inf")) | F.isnan(value)
            checks.append(
                (
                    value.isNotNull() & infinite,
                    f"{name} is NaN or infinite (declare allow_nan: true to take them)",
                )
            )
    malformed = (
        f"malformed: not a {source.format} record with the declared column types (bad syntax, "
        "nested too deep, too long, or a value of the wrong type)"
    )
    reasons = F.concat_ws("; ", *[F.when(test, F.lit(why)) for test, why in checks])
    return (
        F.when(F.col(CORRUPT).isNotNull(), F.lit(malformed))
        .when(reasons != "", reasons)
        .otherwise(F.lit(None).cast("string"))
    )


def _file_of_row() -> Column:
    """The file a row was read from, as ``reported`` names it: Spark's ``_metadata.file_path``
    is URL-encoded (``a%20b``), and a literal ``+`` stays as it is."""

    encoded = F.regexp_replace(F.col("_metadata.file_path"), r"\+", "%2B")
    return F.url_decode(encoded).alias("_path")


def _read_csv(
    spark: SparkSession,
    source: Source,
    files: Sequence[RawFile],
    columns: list[tuple[str, str]],
) -> DataFrame:
    """Each group of files sharing a header read with a schema in that header's order, then
    lined up by column name (a column a file lacks is null)."""

    types = dict(columns)
    declared = tuple(n for n, _ in columns)
    groups: dict[tuple[str, ...], list[str]] = {}
    for file in files:
        header = file.columns if source.csv_header and file.columns else declared
        groups.setdefault(header, []).append(file.path)
    frames = []
    for header, members in groups.items():
        ddl = _ddl([(h, types.get(h, "string")) for h in header])
        reader = _permissive(spark.read.schema(f"{ddl}, `{CORRUPT}` string"))
        frame = (
            reader.option("header", str(source.csv_header).lower())
            .option("enforceSchema", "true")
            .option("multiLine", "true")  # RFC 4180: a quoted field may hold line breaks
            .option("escape", '"')  # and doubled quotes
            .option("encoding", java_charset(source.encoding) or "UTF-8")
            .csv(members)
        )
        present = [
            F.col(_quoted(n)) if n in header else F.lit(None).cast(kind).alias(n)
            for n, kind in columns
        ]
        frames.append(frame.select(*present, F.col(CORRUPT), _file_of_row()))
    union: DataFrame = reduce(lambda a, b: a.unionByName(b), frames)
    return union


def _read_decoded_json(
    spark: SparkSession, source: Source, paths: list[str], columns: list[tuple[str, str]]
) -> DataFrame:
    """JSON lines in an encoding Spark's JSON reader cannot split by line (UTF-16 ...): the
    executors decode each object (already checked to decode) a few MB at a time and Spark
    parses each line."""

    ship_by_value()
    encoding, s3, lines_of = source.encoding, s3_endpoint(spark), raw_files.object_lines

    def lines(batches):  # type: ignore[no-untyped-def]  # Arrow batches in, Arrow batches out
        # pyarrow: on the executors, where the batches are
        import pyarrow as pa

        for batch in batches:
            for path in batch.column(0).to_pylist():
                kept: list[str] = []
                for line in lines_of(path, encoding, s3):
                    if line.strip():
                        kept.append(line)
                    if len(kept) == 10_000:
                        yield pa.RecordBatch.from_pydict({"_path": [path] * 10_000, "_line": kept})
                        kept = []
                if kept:
                    yield pa.RecordBatch.from_pydict({"_path": [path] * len(kept), "_line": kept})

    schema = f"{_ddl(columns)}, `{CORRUPT}` string"
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
    objects = spark.createDataFrame(
        [(reported(p), reported(p)) for p in paths], "p string, s string"
    )
    frame = objects.repartition(min(len(paths), 10_000)).mapInArrow(
        lines, "_path string, _line string"
    )
    parsed = frame.select("_path", F.from_json("_line", schema, options).alias("r"))
    return parsed.select(*[F.col(f"r.{_quoted(n)}") for n, _ in columns], f"r.{CORRUPT}", "_path")


def ship_by_value() -> None:
    """Executors unpickle ``raw_files.inspect`` without this package installed: the module's
    functions travel with the job (they need only the standard library and pyarrow)."""

    cloudpickle.register_pickle_by_value(raw_open)  # type: ignore[no-untyped-call]
    cloudpickle.register_pickle_by_value(raw_files)  # type: ignore[no-untyped-call]


def _ddl(columns: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"{_quoted(n)} {t}" for n, t in columns)


def _quoted(name: str) -> str:
    """``name`` as a Spark identifier, whatever it holds."""
    return "`" + name.replace("`", "``") + "`"


def _permissive(reader: Any) -> Any:
    return reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)


def files_of(
    entries: Mapping[str, Mapping[str, Any]], bucket: str, path_of: Callable[[str, str], str]
) -> list[RawFile]:
    """The ``RawFile`` of each manifest entry (primary key -> entry; an entry without a uri
    was read from ``bucket``); ``path_of(bucket, key)`` gives where Spark reads it."""
    files = []
    for key, entry in entries.items():
        uri = str(entry.get("uri") or f"s3://{bucket}/{key}")
        columns = entry.get("columns")
        files.append(
            RawFile(
                path_of(*uri.removeprefix("s3://").split("/", 1)),
                uri,
                float(entry["ingested_at"]),
                str(entry["batch_id"]),
                None if columns is None else tuple(columns),
            )
        )
    return files
