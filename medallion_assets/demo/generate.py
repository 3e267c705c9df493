"""``medallion demo-data``: TheWorldShop's raw S3 files, byte for byte the same from a seed.

Every source of the catalog gets one file per day in its declared format and columns: partitioned
sources one per partition (``<prefix>dt=2026-01-01/part-00000.jsonl``), the others one export
batch per day (``<prefix>batch=0001/part-00000.csv``). Where the files go is the caller's choice::

    files = generate(load_catalog("."), DemoSettings(rows=500, seed=7))
    write_files(files, LocalFolderObjectStore(Path(".medallion/s3")))

jsonl and csv files get about ``MALFORMED_RATE`` extra, corrupted copies of real records (a
truncated JSON line, a csv row with a wrong field count or a non-numeric number) for bronze to
quarantine; parquet is written by a library and is never malformed. Records are plain dicts of
Python values (int, float, Decimal, str, bool, date, UTC datetime, lists of dicts); the declared
columns decide what is written and in which order.
"""

from __future__ import annotations

import csv
import io
import json
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.sources import Column, Source
from medallion_assets.demo.orders import simulate

if TYPE_CHECKING:
    import pyarrow as pa

from medallion_assets.demo.world import (
    Days,
    DemoSettings,
    Record,
    address_feed,
    customers,
    fx_rates,
    fx_records,
    products,
    snapshots,
)

T = TypeVar("T")

EXTENSIONS = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet"}
MALFORMED_RATE = 0.0075
# Tokens an export writes where a number belongs; Spark cannot parse any of them as a number
# (unlike "NaN", "Infinity" or "1,299", which some parsers accept).
NON_NUMERIC = ("n/a", "#REF!", "unknown", "-", "12O")
NUMERIC = ("bigint", "long", "int", "smallint", "tinyint", "double", "float", "real", "decimal")


@dataclass(frozen=True)
class GeneratedFile:
    """One object to write: ``rows`` valid records plus ``malformed`` deliberately broken ones."""

    bucket: str
    key: str
    data: bytes = field(repr=False)
    rows: int
    malformed: int
    source: str = ""


class ObjectWriter(Protocol):
    """What writing needs from an object store (``medallion_assets.io.object_store``)."""

    def ensure_bucket(self, bucket: str) -> None: ...
    def put(self, bucket: str, key: str, data: bytes) -> object: ...


def simulate_shop(settings: DemoSettings) -> dict[str, Days]:
    """TheWorldShop's records per raw source, one list per day of the window."""
    people, items, rates = customers(settings), products(settings), fx_rates(settings)
    activity = simulate(settings, people, items, rates)
    return {
        "orders": activity.orders,
        "customers": snapshots(settings, people),
        "address_validation_feed": address_feed(settings, people),
        "fx_rates": fx_records(settings, rates),
        "products": snapshots(settings, items),
        "user_events": activity.user_events,
        "shipments": activity.shipments,
        "payments": activity.payments,
    }


def generate(catalog: Catalog, settings: DemoSettings) -> list[GeneratedFile]:
    """One file per source and day, in the catalog's source order; nothing is written."""
    shop = simulate_shop(settings)
    files = []
    for name, source in catalog.sources.items():
        # A source the demo shop does not know still gets rows that fit its declared schema.
        days = shop.get(name) or generic_days(settings, name, source)
        rng = settings.rng(f"malformed:{name}")
        for day, records in enumerate(days):
            moment = settings.day_start(day)
            complete = [fill_required(r, source.columns, i, moment) for i, r in enumerate(records)]
            data, malformed = encode(source.format, source.columns, complete, rng)
            key = object_key(source, settings, day)
            files.append(GeneratedFile(source.bucket, key, data, len(records), malformed, name))
    return files


def object_key(source: Source, settings: DemoSettings, day: int) -> str:
    if source.partition:
        folder = source.partition.replace("{date}", settings.day_start(day).date().isoformat())
    else:
        folder = f"batch={day + 1:04d}"
    return f"{source.prefix}{folder}/part-00000.{EXTENSIONS[source.format]}"


def write_files(files: Iterable[GeneratedFile], store: ObjectWriter) -> None:
    files = list(files)
    for bucket in sorted({f.bucket for f in files}):
        store.ensure_bucket(bucket)
    for file in files:
        store.put(file.bucket, file.key, file.data)


def generic_value(spark_type: str, index: int, moment: datetime) -> Any:
    """A plausible value of a Spark type, for columns and sources the demo shop does not model."""
    kind = spark_type.lower()
    if kind.startswith(("bigint", "long", "int", "smallint", "tinyint")):
        return index % 100 + 1
    if kind.startswith(("decimal", "numeric")):
        return Decimal(index % 100)
    if kind.startswith(("double", "float", "real")):
        return float(index % 100)
    if kind == "date":
        return moment.date()
    if kind.startswith("timestamp"):
        return moment
    if kind.startswith(("array", "map", "struct")):
        return [] if kind.startswith("array") else {}
    return index % 2 == 0 if kind == "boolean" else f"demo-{index + 1}"


def generic_days(settings: DemoSettings, name: str, source: Source) -> Days:
    rng, rows = settings.rng(f"generic:{name}"), max(1, settings.rows // settings.days // 10)
    return [
        [
            {
                c.name: None
                if c.nullable and rng.random() < 0.1
                else generic_value(c.type, i, settings.day_start(day) + timedelta(seconds=i))
                for c in source.columns
            }
            for i in range(rows)
        ]
        for day in range(settings.days)
    ]


def fill_required(
    record: Record, columns: Sequence[Column], index: int, moment: datetime
) -> Record:
    """``record`` with a value in every non-nullable column a project added to a known source."""
    missing = [c for c in columns if not c.nullable and record.get(c.name) is None]
    if not missing:
        return record
    return {**record, **{c.name: generic_value(c.type, index, moment) for c in missing}}


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split at separators outside <> and ().

    >>> split_top_level("a:int, b:decimal(5,2), c:map<string,int>")
    ['a:int', 'b:decimal(5,2)', 'c:map<string,int>']
    """
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        if char == separator and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()] if current.strip() else parts


def arrow_type(spark_type: str) -> pa.DataType:
    """The Arrow type of a Spark SQL type string (nested arrays, structs and maps included)."""
    import pyarrow as pa  # imported here: only parquet sources pay its import time

    text = spark_type.strip().lower()
    # fmt: off
    simple: dict[str, pa.DataType] = {
        "bigint": pa.int64(), "long": pa.int64(), "int": pa.int32(), "integer": pa.int32(),
        "smallint": pa.int16(), "tinyint": pa.int8(), "double": pa.float64(),
        "float": pa.float32(), "real": pa.float32(), "date": pa.date32(),
        "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ltz": pa.timestamp("us", tz="UTC"),
        "timestamp_ntz": pa.timestamp("us"), "boolean": pa.bool_(), "string": pa.string(),
        "binary": pa.binary(),
    }
    # fmt: on
    if text in simple:
        return simple[text]
    if text.startswith(("varchar", "char")):
        return pa.string()
    if text.startswith(("decimal", "numeric")):
        precision, _, scale = text.partition("(")[2].rstrip(")").partition(",")
        return pa.decimal128(int(precision or 10), int(scale or 0))
    head, _, inner = text.partition("<")
    inner = inner.removesuffix(">")
    if head == "array":
        return pa.list_(arrow_type(inner))
    if head == "struct":
        fields = [field.split(":", 1) for field in split_top_level(inner)]
        return pa.struct([pa.field(name.strip("` "), arrow_type(kind)) for name, kind in fields])
    if head == "map":
        key, value = split_top_level(inner)
        return pa.map_(arrow_type(key), arrow_type(value))
    raise ValueError(f"no Arrow type for Spark type {spark_type!r}")


def arrow_schema(columns: Sequence[Column]) -> pa.Schema:
    # pyiceberg and pyarrow: loaded only when the lake is read without Spark
    import pyarrow as pa

    return pa.schema([pa.field(c.name, arrow_type(c.type), c.nullable) for c in columns])


def is_numeric(spark_type: str) -> bool:
    return spark_type.lower().startswith(NUMERIC)


def text_value(value: Any) -> Any:
    """How JSON and csv spell what ``json`` cannot: ISO dates, ``...Z`` timestamps, and
    decimals as JSON numbers (quantized, so the shortest float repr prints them exactly)."""
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(f"the demo cannot write a {type(value).__name__}: {value!r}")


def csv_field(value: Any) -> str:
    if value is None:
        return ""  # Spark reads an empty csv field as null
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (Decimal, str)):
        return str(value)
    return str(text_value(value) if isinstance(value, date) else value)


def malformed_count(rows: int, rate: float = MALFORMED_RATE) -> int:
    """How many broken copies a file of ``rows`` records gets: about ``rate``, at least one in
    any file of ten or more records, so every bronze table has something to quarantine.

    >>> malformed_count(9), malformed_count(10), malformed_count(1_000)
    (0, 1, 8)
    """
    count = round(rows * rate)
    return 1 if count == 0 and rows >= 10 else count


def encode(
    fmt: str, columns: Sequence[Column], records: Sequence[dict[str, Any]], rng: random.Random
) -> tuple[bytes, int]:
    """The file's bytes and how many malformed records were mixed in."""
    if fmt == "parquet":
        return _parquet(columns, records), 0
    names = [c.name for c in columns]
    if fmt == "jsonl":
        lines = [
            json.dumps({n: r.get(n) for n in names}, ensure_ascii=False, default=text_value)
            for r in records
        ]
        broken = _corrupt(lines, rng, _truncate)
        return "".join(f"{line}\n" for line in broken).encode(), len(broken) - len(lines)
    if fmt == "csv":
        rows = [[csv_field(r.get(n)) for n in names] for r in records]
        broken_rows = _corrupt(rows, rng, lambda row, g: _break_csv_row(row, columns, g))
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(broken_rows)
        return out.getvalue().encode(), len(broken_rows) - len(rows)
    raise ValueError(f"unknown source format {fmt!r}: expected jsonl, csv or parquet")


def _corrupt(
    items: list[T], rng: random.Random, breaker: Callable[[T, random.Random], T]
) -> list[T]:
    """``items`` with broken copies of a few of them inserted right after their originals."""
    chosen = set(rng.sample(range(len(items)), malformed_count(len(items))))
    out: list[T] = []
    for index, item in enumerate(items):
        out.append(item)
        if index in chosen:
            out.append(breaker(item, rng))
    return out


def _truncate(line: str, rng: random.Random) -> str:
    # The export died mid-record: any proper prefix of one JSON object is invalid JSON.
    return line[: rng.randint(len(line) // 3, len(line) - 2)]


def _break_csv_row(row: list[str], columns: Sequence[Column], rng: random.Random) -> list[str]:
    row = list(row)
    kind = rng.choice(("unquoted_comma", "missing_fields", "non_numeric"))
    numeric = [i for i, c in enumerate(columns) if is_numeric(c.type)]
    if kind == "non_numeric" and numeric:
        row[rng.choice(numeric)] = rng.choice(NON_NUMERIC)
        return row
    texts = [i for i, value in enumerate(row) if " " in value]
    if kind == "unquoted_comma" and texts:
        # A free-text field whose comma the exporter did not quote: one field becomes two.
        i = rng.choice(texts)
        head, _, tail = row[i].partition(" ")
        return [*row[:i], head, tail, *row[i + 1 :]]
    if len(row) < 2:
        return [*row, "extra"]
    return row[: max(1, len(row) - rng.randint(1, 3))]


def _parquet(columns: Sequence[Column], records: Sequence[dict[str, Any]]) -> bytes:
    schema = arrow_schema(columns)
    # pyiceberg and pyarrow: loaded only when the lake is read without Spark
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(
        [{c.name: r.get(c.name) for c in columns} for r in records], schema=schema
    )
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()
