"""The demo data generator: byte-identical from a seed, true to the declared schemas except for
the malformed records it counts, referentially consistent, and with the vendor's 'UK' mistake.

Files are parsed here with the standard library (json, csv) and pyarrow, independently of the
generator's own encoder.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from collections import Counter, defaultdict
from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.sources import Column, Source
from medallion_assets.cli.demo_cmd import demo_data
from medallion_assets.demo import DemoSettings, GeneratedFile, generate, write_files
from medallion_assets.demo.generate import arrow_type, malformed_count
from medallion_assets.io.object_store import LocalFolderObjectStore
from tests.s3_server import S3Server

SETTINGS = DemoSettings(rows=400, seed=7, days=3, start=date(2026, 1, 1), vendor_uk_rate=0.15)
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
INTEGER = re.compile(r"-?\d+")
DECIMAL = re.compile(r"-?\d+(\.\d+)?")
ITEMS = re.compile(r"array<struct<(.+)>>")


# --- parsing the files independently of the generator -------------------------------------------


def typed(value: Any, spark_type: str, *, csv_text: bool) -> Any:
    """``value`` as a Python value of ``spark_type``; ValueError when it does not fit."""
    if csv_text and value == "":
        return None
    if value is None:
        return None
    if spark_type in ("bigint", "int"):
        if csv_text:
            if not INTEGER.fullmatch(value):
                raise ValueError(f"{value!r} is not an integer")
            value = int(value)
        if type(value) is not int or abs(value) >= 2 ** (63 if spark_type == "bigint" else 31):
            raise ValueError(f"{value!r} is not a {spark_type}")
        return value
    if spark_type == "double":
        if csv_text:
            if not DECIMAL.fullmatch(value):
                raise ValueError(f"{value!r} is not a double")
            return float(value)
        if type(value) not in (int, float):
            raise ValueError(f"{value!r} is not a double")
        return float(value)
    if spark_type.startswith("decimal"):
        precision, scale = map(int, spark_type[8:-1].split(","))
        text = value if csv_text else repr(value)
        if type(value) not in ((str,) if csv_text else (int, float)) or not DECIMAL.fullmatch(text):
            raise ValueError(f"{value!r} is not a {spark_type}")
        number = Decimal(text)
        if -number.as_tuple().exponent > scale or abs(number) >= 10 ** (precision - scale):
            raise ValueError(f"{value!r} does not fit {spark_type}")
        return number
    if spark_type == "boolean":
        if csv_text and value in ("true", "false"):
            return value == "true"
        if type(value) is not bool:
            raise ValueError(f"{value!r} is not a boolean")
        return value
    if spark_type == "timestamp":
        if not isinstance(value, str) or not TIMESTAMP.fullmatch(value):
            raise ValueError(f"{value!r} is not an ISO UTC timestamp")
        return datetime.fromisoformat(value)
    if spark_type == "date":
        return date.fromisoformat(value)
    if spark_type == "string":
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a string")
        return value
    if match := ITEMS.fullmatch(spark_type):
        fields = dict(f.split(":", 1) for f in re.split(r",(?![^(]*\))", match.group(1)))
        if not isinstance(value, list) or any(set(v) != set(fields) for v in value):
            raise ValueError(f"{value!r} is not an {spark_type}")
        return [{k: typed(v[k], t, csv_text=False) for k, t in fields.items()} for v in value]
    raise AssertionError(f"the test does not know {spark_type}")


def typed_record(values: dict[str, Any], columns: tuple[Column, ...], *, csv_text: bool) -> dict:
    if list(values) != [c.name for c in columns]:
        raise ValueError(f"columns {list(values)} are not the declared ones")
    record = {c.name: typed(values[c.name], c.type, csv_text=csv_text) for c in columns}
    missing = [c.name for c in columns if not c.nullable and record[c.name] is None]
    if missing:
        raise ValueError(f"non-nullable {missing} are null")
    return record


def parse(source: Source, file: GeneratedFile) -> tuple[list[dict], int]:
    """(records that fit the declared schema, records that do not)."""
    good, bad = [], 0
    if source.format == "parquet":
        table = pq.read_table(io.BytesIO(file.data))
        return table.to_pylist(), 0
    if source.format == "jsonl":
        rows: list[Any] = file.data.decode().splitlines()
    else:
        reader = csv.reader(io.StringIO(file.data.decode()))
        assert next(reader) == [c.name for c in source.columns]
        rows = list(reader)
    for row in rows:
        try:
            if source.format == "jsonl":
                good.append(typed_record(json.loads(row), source.columns, csv_text=False))
            elif len(row) != len(source.columns):
                raise ValueError("wrong field count")
            else:
                values = dict(zip([c.name for c in source.columns], row, strict=True))
                good.append(typed_record(values, source.columns, csv_text=True))
        except ValueError:  # json.JSONDecodeError is a ValueError too
            bad += 1
    return good, bad


@pytest.fixture(scope="module")
def files(demo_catalog: Catalog) -> list[GeneratedFile]:
    return generate(demo_catalog, SETTINGS)


@pytest.fixture(scope="module")
def records(demo_catalog: Catalog, files: list[GeneratedFile]) -> dict[str, list[dict]]:
    """Valid records of each source, all days together."""
    parsed: dict[str, list[dict]] = defaultdict(list)
    for file in files:
        parsed[file.source] += parse(demo_catalog.sources[file.source], file)[0]
    return parsed


def latest(rows: list[dict], key: str, clock: str) -> dict[Any, dict]:
    newest: dict[Any, dict] = {}
    for row in sorted(rows, key=lambda r: r[clock]):
        newest[row[key]] = row
    return newest


def accepted(catalog: Catalog, table: str, column: str) -> set[str]:
    values = next(
        r.values
        for r in catalog.datasets[table].rules
        if r.kind == "accepted_values" and r.column == column
    )
    # YAML 1.1 reads an unquoted NO (Norway) in validation.yaml as false.
    return {v if isinstance(v, str) else "NO" for v in values}


# --- determinism and layout ---------------------------------------------------------------------


def test_same_seed_and_settings_give_byte_identical_files(demo_catalog, files):
    again = generate(demo_catalog, SETTINGS)
    assert [(f.bucket, f.key, f.data) for f in again] == [(f.bucket, f.key, f.data) for f in files]


def test_another_seed_gives_other_data_in_every_file(demo_catalog, files):
    other = generate(demo_catalog, DemoSettings(rows=400, seed=8, days=3))
    assert [f.key for f in other] == [f.key for f in files]
    assert all(a.data != b.data for a, b in zip(other, files, strict=True))


def test_each_source_gets_one_file_per_day_at_its_partition_or_batch(demo_catalog, files):
    days = [(SETTINGS.start + timedelta(days=d)).isoformat() for d in range(SETTINGS.days)]
    for name, source in demo_catalog.sources.items():
        keys = [f.key for f in files if f.source == name]
        ext = source.format
        if source.partition:
            folders = [source.partition.replace("{date}", day) for day in days]
        else:
            folders = [f"batch={n:04d}" for n in range(1, SETTINGS.days + 1)]
        assert keys == [f"{source.prefix}{folder}/part-00000.{ext}" for folder in folders], name
        assert {f.bucket for f in files if f.source == name} == {source.bucket}
    assert any(f.key == "user_events/dt=2026-01-03/part-00000.jsonl" for f in files)


def test_files_are_written_to_a_local_folder_as_bucket_and_key(files, tmp_path):
    write_files(files, LocalFolderObjectStore(tmp_path))
    for file in files:
        assert (tmp_path / file.bucket / file.key).read_bytes() == file.data
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) == len(files)


# --- schema and malformed records ---------------------------------------------------------------


def test_every_record_fits_the_declared_schema_except_the_counted_malformed(demo_catalog, files):
    for file in files:
        good, bad = parse(demo_catalog.sources[file.source], file)
        assert (len(good), bad) == (file.rows, file.malformed), file.key


def test_malformed_records_are_rare_and_only_in_jsonl_and_csv(demo_catalog, files):
    for file in files:
        fmt = demo_catalog.sources[file.source].format
        if fmt == "parquet":
            assert file.malformed == 0
        elif file.rows >= 10:
            assert 1 <= file.malformed <= max(1, round(file.rows * 0.0075)), file.key
    assert (malformed_count(1000), malformed_count(200), malformed_count(10)) == (8, 2, 1)
    assert malformed_count(9) == 0


def test_parquet_columns_have_the_arrow_types_of_the_spark_types(demo_catalog, files):
    fx = next(f for f in files if f.source == "fx_rates")
    assert pq.read_schema(io.BytesIO(fx.data)).remove_metadata() == pa.schema(
        [
            pa.field("rate_date", pa.date32(), nullable=False),
            pa.field("currency", pa.string(), nullable=False),
            pa.field("usd_per_unit", pa.decimal128(18, 8), nullable=False),
            pa.field("provider", pa.string()),
            pa.field("published_at", pa.timestamp("us", tz="UTC")),
        ]
    )
    items = next(c.type for c in demo_catalog.sources["orders"].columns if c.name == "items")
    assert arrow_type(items) == pa.list_(
        pa.struct(
            [
                ("product_id", pa.int64()),
                ("quantity", pa.int32()),
                ("unit_price", pa.decimal128(18, 2)),
            ]
        )
    )
    assert arrow_type("boolean") == pa.bool_() and arrow_type("int") == pa.int32()


# --- referential consistency --------------------------------------------------------------------


def test_orders_reference_customers_and_products(records):
    customers = {c["customer_id"] for c in records["customers"]}
    products = {p["product_id"] for p in records["products"]}
    assert {o["customer_id"] for o in records["orders"]} <= customers
    assert {i["product_id"] for o in records["orders"] for i in o["items"]} <= products
    assert all(i["quantity"] >= 1 for o in records["orders"] for i in o["items"])
    for order in records["orders"]:
        lines = sum(i["quantity"] * i["unit_price"] for i in order["items"])
        extra = (order["shipping_amount"] or 0) + (order["tax_amount"] or 0)
        assert order["subtotal_amount"] == lines and order["total_amount"] == lines + extra


def test_orders_are_re_exported_on_each_status_change(demo_catalog, records):
    versions = defaultdict(list)
    for order in records["orders"]:
        versions[order["order_id"]].append(order)
    assert len(versions) >= SETTINGS.rows * 0.95  # a few placed late on the last day are cut off
    assert sum(len(v) >= 3 for v in versions.values()) > len(versions) / 4
    statuses = accepted(demo_catalog, "silver.orders_usd", "status")
    for history in versions.values():
        stamps = [v["updated_at"] for v in history]
        assert len(set(stamps)) == len(stamps)  # the dedup's ORDER BY updated_at never ties
        first = min(history, key=lambda v: v["updated_at"])
        assert first["status"] == "placed" and {v["status"] for v in history} <= statuses
        assert all(v["updated_at"] >= v["order_ts"] for v in history)


def test_fx_rates_cover_every_currency_on_every_order_and_payment_day(records):
    rates = Counter((r["rate_date"], r["currency"]) for r in records["fx_rates"])
    assert set(rates.values()) == {1} and all(r["usd_per_unit"] > 0 for r in records["fx_rates"])
    needed = {(o["order_ts"].date(), o["currency"]) for o in records["orders"]}
    needed |= {(p["attempt_ts"].date(), p["currency"]) for p in records["payments"]}
    assert needed <= set(rates)


def test_payments_and_shipments_belong_to_exported_orders(demo_catalog, records):
    orders = latest(records["orders"], "order_id", "updated_at")
    for payment in records["payments"]:
        order = orders[payment["order_id"]]
        assert (payment["amount"], payment["currency"]) == (
            order["total_amount"],
            order["currency"],
        )
        assert 0 <= payment["processor_risk_score"] <= 100
    for shipment in records["shipments"]:
        assert orders[shipment["order_id"]]["ship_to_country"] == shipment["destination_country"]
        if shipment["delivered_ts"]:
            assert shipment["delivered_ts"] >= shipment["shipped_ts"]
    assert {p["status"] for p in records["payments"]} <= accepted(
        demo_catalog, "silver.payments", "status"
    )
    assert {s["status"] for s in records["shipments"]} <= accepted(
        demo_catalog, "silver.shipments", "status"
    )


def test_user_events_reference_customers_and_products_and_fall_in_their_partition(
    demo_catalog, files, records
):
    customers = {c["customer_id"] for c in records["customers"]}
    products = {p["product_id"] for p in records["products"]}
    events = records["user_events"]
    assert {e["customer_id"] for e in events} - {None} <= customers
    assert {e["product_id"] for e in events} - {None} <= products
    assert {e["event_type"] for e in events} <= accepted(
        demo_catalog, "silver.user_events", "event_type"
    )
    purchases = {(e["customer_id"], e["event_ts"]) for e in events if e["event_type"] == "purchase"}
    placed = {(o["customer_id"], o["order_ts"]) for o in records["orders"]}
    assert purchases == placed
    assert len(events) > len({e["event_id"] for e in events})  # redelivered duplicates
    for file in (f for f in files if f.source == "user_events"):
        day = file.key.split("dt=")[1][:10]
        good, _ = parse(demo_catalog.sources["user_events"], file)
        assert {e["event_ts"].date().isoformat() for e in good} == {day}


def test_vendor_feed_covers_customers_and_mislabels_a_few_gb_rows_as_uk(demo_catalog, records):
    feed = records["address_validation_feed"]
    customers = latest(records["customers"], "customer_id", "updated_at")
    assert {r["customer_id"] for r in feed} <= set(customers)
    iso = accepted(demo_catalog, "silver.addresses_validated", "country_code")
    wrong = [r for r in feed if r["country_code"] not in iso]
    assert {r["country_code"] for r in wrong} == {"UK"}
    assert 0 < len(wrong) <= 0.05 * len(feed)
    assert all(customers[r["customer_id"]]["country_code"].upper() in ("GB", "UK") for r in wrong)
    verdicts = latest(feed, "customer_id", "validated_at")
    assert any(v["country_code"] == "UK" for v in verdicts.values())  # the check must see one
    statuses = accepted(demo_catalog, "silver.addresses_validated", "validation_status")
    assert {r["validation_status"] for r in feed} <= statuses
    assert all(0 <= r["match_confidence"] <= 1 for r in feed if r["match_confidence"] is not None)


def test_customer_and_product_snapshots_have_unique_keys_and_valid_emails(demo_catalog, files):
    pattern = next(
        r.pattern for r in demo_catalog.datasets["bronze.customers"].rules if r.kind == "regex"
    )
    for file in files:
        if file.source in ("customers", "products"):
            good, _ = parse(demo_catalog.sources[file.source], file)
            key = "customer_id" if file.source == "customers" else "product_id"
            assert len({r[key] for r in good}) == len(good)
            if file.source == "products":
                assert len({r["sku"] for r in good}) == len(good)
            else:
                assert all(re.match(pattern, r["email"].lower()) for r in good)


# --- the command ------------------------------------------------------------------------------


def test_demo_data_command_writes_the_files_and_prints_a_summary(demo_project: Path, tmp_path):
    target = tmp_path / "s3"
    args = ["--rows", "100", "--seed", "3", "--days", "2", "--target", str(target)]
    result = CliRunner().invoke(demo_data, [*args, "--project", str(demo_project)])
    assert result.exit_code == 0, result.output
    assert (target / "theworldshop-raw/user_events/dt=2026-01-02/part-00000.jsonl").is_file()
    assert (target / "theworldshop-vendor-drop/address-validation/batch=0002").is_dir()
    lines = result.output.splitlines()
    assert lines[1].split() == ["source", "files", "rows", "malformed", "bytes", "location"]
    assert any(line.startswith("user_events ") and str(target) in line for line in lines)
    assert lines[-1].startswith("total")


def test_the_vendor_writes_uk_only_when_asked(demo_project: Path, tmp_path):
    """A first run of the demo is green; the data problem that blocks a table is on request."""

    def uk_rows(*extra: str) -> int:
        target = tmp_path / ("s3" + "".join(extra))
        args = ["--rows", "200", "--days", "2", "--target", str(target), *extra]
        result = CliRunner().invoke(demo_data, [*args, "--project", str(demo_project)])
        assert result.exit_code == 0, result.output
        feed = target / "theworldshop-vendor-drop"
        rows = [r for p in feed.rglob("*.csv") for r in csv.DictReader(io.StringIO(p.read_text()))]
        assert rows
        return sum(r.get("country_code") == "UK" for r in rows)

    assert uk_rows() == 0
    assert uk_rows("--with-vendor-errors") > 0


def test_demo_data_command_refuses_an_s3_target_with_a_bucket(demo_project: Path):
    args = ["--target", "s3://my-bucket/x", "--project", str(demo_project)]
    result = CliRunner().invoke(demo_data, args)
    assert result.exit_code == 2 and "takes no bucket" in result.output


@pytest.mark.slow
def test_demo_data_command_writes_to_the_s3_endpoint_creating_the_buckets(
    demo_project: Path, s3_server: S3Server, s3_env: dict[str, str]
):
    client = s3_server.client()
    for bucket in ("theworldshop-raw", "theworldshop-vendor-drop"):  # another test's objects
        with contextlib.suppress(client.exceptions.NoSuchBucket):  # (the server is shared)
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                for found in page.get("Contents", []):
                    client.delete_object(Bucket=bucket, Key=found["Key"])
    args = ["--rows", "50", "--days", "1", "--target", "s3://", "--project", str(demo_project)]
    result = CliRunner().invoke(demo_data, args)
    assert result.exit_code == 0, result.output
    listing = client.list_objects_v2(Bucket="theworldshop-vendor-drop")
    assert [o["Key"] for o in listing["Contents"]] == [
        "address-validation/batch=0001/part-00000.csv"
    ]
    events = client.get_object(
        Bucket="theworldshop-raw", Key="user_events/dt=2026-01-01/part-00000.jsonl"
    )
    assert events["Body"].read().startswith(b'{"event_id": ')
    assert "s3://theworldshop-raw/orders/" in result.output
