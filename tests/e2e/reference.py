"""An independent computation of every table, to check the pipeline's results against.

It shares no code with the runtime's execution path: raw objects are fetched with plain boto3,
parsed with Python's json/csv modules and pyarrow against the declared schemas (a record that
does not parse or does not cast is malformed, as in Spark's PERMISSIVE mode), loaded into
DuckDB, and every table's SQL is transpiled to DuckDB by sqlglot and run there.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import duckdb
import pandas as pd
import pyarrow.parquet as pq
from sqlglot import exp, parse_one

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.sources import Source

INGESTED_AT = datetime(2026, 1, 1, tzinfo=UTC)


class Malformed(ValueError):
    pass


def cast(value: Any, spark_type: str) -> Any:
    """Cast one JSON/CSV value to the declared Spark type, or raise Malformed."""
    if value is None or value == "":
        return None
    try:
        if spark_type in ("bigint", "int"):
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise Malformed(value)
            return int(value)
        if spark_type in ("double", "float"):
            return float(value)
        if spark_type.startswith("decimal"):
            return Decimal(str(value))
        if spark_type == "boolean":
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "false"):
                return str(value).lower() == "true"
            raise Malformed(value)
        if spark_type == "date":
            return date.fromisoformat(str(value))
        if spark_type == "timestamp":
            return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        if spark_type.startswith("array<struct<"):
            items = json.loads(value) if isinstance(value, str) else value
            fields = re.split(r",(?![^()]*\))", spark_type[len("array<struct<") : -2])
            names = [f.split(":")[0] for f in fields]
            types = [f.split(":", 1)[1] for f in fields]
            return [
                {n: cast(item.get(n), t) for n, t in zip(names, types, strict=True)}
                for item in items
            ]
        return str(value)
    except (ValueError, TypeError, InvalidOperation, AttributeError) as error:
        raise Malformed(value) from error


def parse(source: Source, data: bytes) -> tuple[list[dict[str, Any]], int]:
    """(records, malformed count) of one raw object."""
    columns = [(c.name, c.type) for c in source.columns]
    if source.format == "parquet":
        return pq.read_table(io.BytesIO(data)).select([n for n, _ in columns]).to_pylist(), 0
    records, malformed = [], 0
    if source.format == "jsonl":
        rows: list[Any] = []
        for line in data.decode().splitlines():
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                malformed += 1
    else:
        reader = csv.reader(io.StringIO(data.decode()))
        header = next(reader)
        rows = []
        for row in reader:
            if len(row) != len(header):
                malformed += 1
                continue
            rows.append(dict(zip(header, row, strict=True)))
    for row in rows:
        try:
            records.append(
                {n: cast(row.get(n) if isinstance(row, dict) else None, t) for n, t in columns}
            )
        except Malformed:
            malformed += 1
    return records, malformed


def compute(catalog: Catalog, s3_client: Any) -> tuple[duckdb.DuckDBPyConnection, dict[str, int]]:
    """All tables of the project in DuckDB; returns the connection and malformed counts."""
    con = duckdb.connect()
    for schema in ("raw", "bronze", "silver", "gold"):
        con.execute(f"CREATE SCHEMA {schema}")
    malformed: dict[str, int] = {}
    for name, source in catalog.sources.items():
        records: list[dict[str, Any]] = []
        malformed[name] = 0
        listing = s3_client.list_objects_v2(Bucket=source.bucket, Prefix=source.prefix)
        for item in listing.get("Contents", []):
            body = s3_client.get_object(Bucket=source.bucket, Key=item["Key"])["Body"].read()
            rows, bad = parse(source, body)
            malformed[name] += bad
            uri = f"s3://{source.bucket}/{item['Key']}"
            records += [
                {**r, "_ingested_at": INGESTED_AT, "_source_file": uri, "_batch_id": "reference"}
                for r in rows
            ]
        _load(con, f"raw.{name}", source, records)
    for dataset in catalog.datasets.values():
        query = parse_one(dataset.sql, read=dataset.dialect)
        if isinstance(query, exp.Create | exp.Insert):
            query = query.expression
        con.execute(f"CREATE TABLE {dataset.name} AS {query.sql(dialect='duckdb')}")
    return con, malformed


def _load(
    con: duckdb.DuckDBPyConnection, table: str, source: Source, records: list[dict[str, Any]]
) -> None:
    import pyarrow as pa

    from medallion_assets.demo.generate import arrow_type  # declared type -> Arrow type

    fields = [pa.field(c.name, arrow_type(c.type)) for c in source.columns]
    fields += [
        pa.field("_ingested_at", pa.timestamp("us", tz="UTC")),
        pa.field("_source_file", pa.string()),
        pa.field("_batch_id", pa.string()),
    ]
    arrow = pa.Table.from_pylist(records, schema=pa.schema(fields))
    con.register("incoming", arrow)
    con.execute(f"CREATE TABLE {table} AS SELECT * FROM incoming")
    con.unregister("incoming")


def normalise(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows comparable across engines: numbers rounded, times in UTC, sorted."""

    def value(v: Any) -> Any:
        if v is None or v is pd.NaT or (isinstance(v, float) and math.isnan(v)):
            return None
        if isinstance(v, float | Decimal):
            return round(float(v), 4)
        if isinstance(v, datetime):
            return (v if v.tzinfo else v.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
        if isinstance(v, list | tuple):
            return json.dumps([value(x) for x in v], default=str)
        if isinstance(v, dict):
            return json.dumps({k: value(x) for k, x in v.items()}, default=str)
        return v

    return sorted((tuple(value(v) for v in row) for row in rows), key=repr)
