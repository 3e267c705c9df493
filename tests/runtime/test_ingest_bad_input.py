"""Bad raw objects at the door, on a real Spark session with a local folder and moto's S3 server
standing in for S3: objects that do not decode are set aside whole and named, never evolve the
schema, and the good objects of the same batch ingest; a copy of an ingested object under a
new key is not ingested twice; quarantine tables holding bad UTF-8 read back."""

from __future__ import annotations

import io
import json
import shutil
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.catalog.sources import Source
from medallion_assets.control.store import ControlStore
from medallion_assets.healing.systems import SOURCE, Places, system_of
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.io.s3_store import Boto3ObjectStore
from medallion_assets.lake import Lake
from medallion_assets.runtime.ingest import raw_inspect
from medallion_assets.runtime.ingest.bronze_ingest import ingest
from medallion_assets.runtime.ingest.raw_files import CorruptObject
from medallion_assets.runtime.ingest.raw_inspect import inspect_objects
from medallion_assets.runtime.ingest.raw_open import RawObjectUnreadable
from medallion_assets.runtime.ingest.schema_drift import (
    EvolvedColumn,
    SchemaDrift,
    evolve,
    read_evolved,
    revert,
)
from medallion_assets.runtime.table_run import RunLog, TableRun
from medallion_assets.testing import read_table
from tests.lake_helpers import publish_frame

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"
CSV_HEADER = "order_id,amount,country\n"

pytestmark = pytest.mark.slow


class Project:
    """The minimal project with its orders source in ``format``, a raw store, a lake; ``run``
    ingests bronze.orders and keeps what it logged and warned."""

    def __init__(self, tmp_path: Path, store, bucket: str, format: str, bronze_sql: str = ""):
        self.root = tmp_path / "project"
        shutil.copytree(MINIMAL, self.root)
        sources = self.root / "metadata" / "sources.yaml"
        text = sources.read_text().replace("format: jsonl", f"format: {format}")
        sources.write_text(text.replace("bucket: minimal-raw", f"bucket: {bucket}"))
        if bronze_sql:
            (self.root / "sql" / "bronze" / "orders.sql").write_text(bronze_sql)
        self.catalog = load_catalog(self.root, use_cache=False)
        self.store, self.bucket = store, bucket
        self.lake = Lake.local(tmp_path / "lake")
        self.control = ControlStore.open(f"sqlite:///{tmp_path / 'control.db'}")
        self.state = self.control.state
        self.logged: list[str] = []
        self.warned: list[str] = []
        store.ensure_bucket(bucket)

    def put(self, key: str, data: bytes) -> None:
        self.store.put(self.bucket, key, data)

    def run(self, spark, run_id: str):
        return self.ingest_through(self.store, spark, run_id)

    def ingest_through(self, store, spark, run_id: str):
        run = TableRun(
            spark=spark,
            lake=self.lake,
            catalog=self.catalog,
            dataset=self.catalog.datasets["bronze.orders"],
            run_id=run_id,
            log=RunLog(self.logged.append, self.warned.append),
            control=self.control,
        )
        return ingest(run, store)

    def rows(self, table: str = "bronze.orders") -> list[int]:
        return sorted(read_table(table, lake_root=self.lake.root)["order_id"].tolist())

    def evolved_state(self) -> list[EvolvedColumn]:
        return read_evolved(self.state, "orders")


@pytest.fixture(params=["local", "moto"])
def store(request, tmp_path: Path):
    if request.param == "local":
        return LocalFolderObjectStore(tmp_path / "s3")
    request.getfixturevalue("s3_env")
    return Boto3ObjectStore(request.getfixturevalue("s3_server").endpoint_url)


def bucket() -> str:
    return f"raw-{uuid.uuid4().hex[:12]}"


def csv(*rows: tuple[int, int, str]) -> bytes:
    return (CSV_HEADER + "".join(f"{o},{a},{c}\n" for o, a, c in rows)).encode()


def jsonl(*rows: dict[str, object]) -> bytes:
    return ("".join(json.dumps(r) + "\n" for r in rows)).encode()


def parquet(*order_ids: int) -> bytes:
    table = pa.table(
        {
            "order_id": pa.array(order_ids, pa.int64()),
            "amount": pa.array([Decimal("5.00")] * len(order_ids), pa.decimal128(18, 2)),
            "country": pa.array(["de"] * len(order_ids)),
        }
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def test_undecodable_csv_objects_are_set_aside_and_the_rest_of_the_batch_ingests(
    spark, tmp_path, store
):
    project = Project(tmp_path, store, bucket(), "csv")
    project.put("orders/a.csv", csv((1, 5, "de")))
    first = project.run(spark, "r1")
    project.put("orders/b.csv", csv((2, 7, "fr")).decode().encode("utf-16"))
    project.put("orders/c.csv", b"\x00\x00\x00\x00,\x00\x00\n2,7,fr\n")  # NUL garbage header
    project.put("orders/d.csv", b"\x01\x02\x03,\x1b[0m\n2,7,fr\n")  # control characters
    project.put("orders/e.csv", csv((3, 9, "gb")))

    second = project.run(spark, "r2")

    assert project.rows() == [1, 3]
    assert second.metadata["quarantined_objects"] == 3
    named = {o["key"]: o["reason"] for o in second.metadata["quarantined_object_keys"]}
    assert sorted(named) == ["orders/b.csv", "orders/c.csv", "orders/d.csv"]
    assert "not valid utf-8" in named["orders/b.csv"]
    assert "NUL characters" in named["orders/c.csv"]
    assert "cannot be a column name" in named["orders/d.csv"]
    assert [w.split(" as a whole")[0] for w in project.warned] == [
        f"quarantined s3://{project.bucket}/orders/{k}.csv" for k in "bcd"
    ]
    assert project.evolved_state() == []  # nothing was taken for drift
    manifest = project.state.manifest("orders", None)
    assert manifest["orders/b.csv"]["quarantined"] == named["orders/b.csv"]
    # The version before stays readable, and a rerun has nothing new to do.
    previous = project.lake.read_arrow([first.build.version])
    assert previous.column("order_id").to_pylist() == [1]
    third = project.run(spark, "r3")
    assert third.build.skipped and third.metadata["quarantined_objects"] == 0
    # A fixed upload under the same key is ingested.
    project.put("orders/b.csv", csv((2, 7, "fr")))
    project.run(spark, "r4")
    assert project.rows() == [1, 2, 3]


def test_a_declared_encoding_is_read(spark, tmp_path):
    project = Project(tmp_path, LocalFolderObjectStore(tmp_path / "s3"), bucket(), "csv")
    sources = project.root / "metadata" / "sources.yaml"
    sources.write_text(
        sources.read_text().replace("format: csv", "format: csv\n    encoding: utf-16")
    )
    project.catalog = load_catalog(project.root, use_cache=False)
    project.put("orders/a.csv", "order_id,amount,country\n1,5,Österreich\n".encode("utf-16"))
    outcome = project.run(spark, "r1")
    assert outcome.metadata["quarantined_objects"] == 0
    bronze = read_table("bronze.orders", lake_root=project.lake.root)
    assert bronze["country"].tolist() == ["Österreich"]


def test_a_json_key_with_a_backtick_never_reaches_the_evolved_schema(spark, tmp_path):
    project = Project(tmp_path, LocalFolderObjectStore(tmp_path / "s3"), bucket(), "jsonl")
    project.put("orders/a.jsonl", jsonl({"order_id": 1, "amount": 5, "country": "de"}))
    project.run(spark, "r1")
    project.put("orders/b.jsonl", jsonl({"order_id": 2, "amount": 7, "country": "fr", "a`b": 1}))
    second = project.run(spark, "r2")
    assert second.build.skipped and project.rows() == [1]
    (quarantined,) = second.metadata["quarantined_object_keys"]
    assert quarantined["key"] == "orders/b.jsonl"
    assert "'a`b' cannot be a column name: it has a backtick" in quarantined["reason"]
    assert project.evolved_state() == []
    # The bad file removed and a good one added: the next run ingests.
    project.store.root.joinpath(project.bucket, "orders", "b.jsonl").unlink()
    project.put("orders/c.jsonl", jsonl({"order_id": 3, "amount": 9, "country": "gb"}))
    project.run(spark, "r3")
    assert project.rows() == [1, 3]


def test_evolved_names_stored_before_they_were_checked_do_not_break_ingest(spark, tmp_path):
    project = Project(tmp_path, LocalFolderObjectStore(tmp_path / "s3"), bucket(), "jsonl")
    poisoned = [EvolvedColumn("a`b"), EvolvedColumn("\x00\x00")]
    project.state.add_evolved("orders", poisoned)  # as an earlier version stored them
    project.put("orders/a.jsonl", jsonl({"order_id": 1, "amount": 5, "country": "de"}))
    project.run(spark, "r1")
    assert project.rows() == [1]
    assert len(project.warned) == 2
    assert project.warned[0].startswith("ignored evolved column 'a`b' of source orders: ")
    assert "medallion control schema orders --revert" in project.warned[0]


def test_empty_and_truncated_parquet_objects_are_named_and_never_retried_as_drift(
    spark, tmp_path, s3_server, s3_env
):
    project = Project(tmp_path, Boto3ObjectStore(s3_server.endpoint_url), bucket(), "parquet")
    project.put("orders/b.parquet", b"")
    project.put("orders/c.parquet", parquet(2)[:-30])
    with pytest.raises(CorruptObject) as raised:  # nothing readable at all: the step fails
        project.run(spark, "r1")
    assert raised.value.key == f"s3://{project.bucket}/orders/b.parquet"
    assert f"s3://{project.bucket}/orders/c.parquet: it is not a readable Parquet" in str(
        raised.value
    )
    assert project.lake.current("bronze.orders") is None
    assert project.state.manifest("orders", None) == {}

    project.put("orders/a.parquet", parquet(1, 3))
    outcome = project.run(spark, "r2")
    assert project.rows() == [1, 3]
    assert [o["key"] for o in outcome.metadata["quarantined_object_keys"]] == [
        "orders/b.parquet",
        "orders/c.parquet",
    ]
    assert project.evolved_state() == []


def test_a_copy_under_a_new_key_is_not_ingested_twice(spark, tmp_path, store):
    project = Project(tmp_path, store, bucket(), "jsonl")
    original = jsonl({"order_id": 1, "amount": 5, "country": "de"})
    project.put("orders/a.jsonl", original)
    project.run(spark, "r1")
    project.put("orders/copy.jsonl", original)
    second = project.run(spark, "r2")
    assert second.build.skipped and project.rows() == [1]
    assert second.metadata["duplicate_objects"] == 1
    (said,) = project.warned
    assert said.startswith("skipped orders/copy.jsonl: same content as orders/a.jsonl ingested 20")
    # Two equal new objects in one batch: the first by key is ingested.
    twin = jsonl({"order_id": 2, "amount": 7, "country": "fr"})
    project.put("orders/x.jsonl", twin)
    project.put("orders/y.jsonl", twin)
    third = project.run(spark, "r3")
    assert project.rows() == [1, 2]
    assert third.metadata["duplicate_object_keys"] == [
        {"key": "orders/y.jsonl", "same_as": "orders/x.jsonl"}
    ]


def test_a_copy_with_another_etag_is_found_by_its_content(spark, tmp_path, s3_server, s3_env):
    """A multipart upload's ETag is not the content's MD5: the download's hash finds it."""
    project = Project(tmp_path, Boto3ObjectStore(s3_server.endpoint_url), bucket(), "jsonl")
    original = jsonl({"order_id": 1, "amount": 5, "country": "de"})
    project.put("orders/a.jsonl", original)
    project.run(spark, "r1")
    client = s3_server.client()
    upload = client.create_multipart_upload(Bucket=project.bucket, Key="orders/b.jsonl")
    part = client.upload_part(
        Bucket=project.bucket,
        Key="orders/b.jsonl",
        UploadId=upload["UploadId"],
        PartNumber=1,
        Body=original,
    )
    client.complete_multipart_upload(
        Bucket=project.bucket,
        Key="orders/b.jsonl",
        UploadId=upload["UploadId"],
        MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]},
    )
    etags = {o.key: o.etag for o in project.store.list(project.bucket, "orders/")}
    assert etags["orders/a.jsonl"] != etags["orders/b.jsonl"]
    outcome = project.run(spark, "r2")
    assert outcome.metadata["duplicate_objects"] == 1 and project.rows() == [1]


def test_a_reverted_column_is_gone_from_the_next_build(spark, tmp_path):
    project = Project(
        tmp_path,
        LocalFolderObjectStore(tmp_path / "s3"),
        bucket(),
        "jsonl",
        bronze_sql="SELECT * FROM raw.orders\n",
    )
    project.put("orders/a.jsonl", jsonl({"order_id": 1, "amount": 5, "country": "de"}))
    project.run(spark, "r1")
    project.put("orders/b.jsonl", jsonl({"order_id": 2, "coupon": "X", "country": "fr"}))
    with pytest.raises(SchemaDrift) as drift:
        project.run(spark, "r2")
    evolve(project.state, "orders", drift.value.new_columns, "r2")
    project.run(spark, "r2")
    assert "coupon" in read_table("bronze.orders", lake_root=project.lake.root).columns
    revert(project.state, "orders", ["coupon"])
    rebuilt = project.run(spark, "r3")
    assert not rebuilt.build.skipped
    bronze = read_table("bronze.orders", lake_root=project.lake.root)
    assert "coupon" not in bronze.columns and sorted(bronze["order_id"]) == [1, 2]


def test_read_table_of_a_quarantine_table_holding_bad_utf8(spark, tmp_path):
    """Spark keeps a string's bytes as they came; pandas gets them with U+FFFD instead."""
    from pyspark.sql import functions as F

    lake = Lake.local(tmp_path / "lake")
    frame = spark.range(1).select(F.unhex(F.lit("7B6FFF")).cast("string").alias("_corrupt_record"))
    publish_frame(lake, spark, frame, "bronze.orders__quarantine", "code", {})
    table = read_table("bronze.orders__quarantine", lake_root=lake.root)
    assert table["_corrupt_record"].tolist() == ["{o\ufffd"]


class SparkReadsOnly:
    """A raw store that lists and names paths but hands no bytes to the driver: ``download``
    and ``read`` fail, so an ingest through it proves Spark read the objects itself."""

    def __init__(self, store):
        self.inner = store

    def list(self, bucket: str, prefix: str):
        return self.inner.list(bucket, prefix)

    def spark_path(self, bucket: str, key: str, size: int = 0) -> str:
        return self.inner.spark_path(bucket, key, size)

    def download(self, *_: object, **__: object):
        raise AssertionError("the driver downloaded a raw object")

    read = download


def test_spark_reads_the_raw_objects_where_they_are(spark, tmp_path, store):
    """Through s3a on moto's S3 server and file: on the local folder, keys with spaces,
    glob characters and ``%`` included; the driver never reads an object."""
    project = Project(tmp_path, store, bucket(), "jsonl")
    keys = ["orders/a b.jsonl", "orders/b[1]{x,y}*.jsonl", "orders/c%20+d=e.jsonl"]
    for number, key in enumerate(keys, 1):
        project.put(key, jsonl({"order_id": number, "amount": number, "country": "de"}))
    outcome = project.ingest_through(SparkReadsOnly(store), spark, "r1")
    assert project.rows() == [1, 2, 3]
    assert outcome.metadata["records_read"] == 3
    bronze = read_table("bronze.orders", lake_root=project.lake.root)
    assert sorted(bronze["_source_file"]) == sorted(f"s3://{project.bucket}/{k}" for k in keys)


def test_rfc4180_csv_quoted_line_breaks_and_doubled_quotes(spark, tmp_path, store):
    project = Project(tmp_path, store, bucket(), "csv")
    text = (
        'order_id,amount,country\r\n1,5,"de\r\nnorth"\r\n2,7,"1 ""Quoted"" Road"\r\n'
        '3,9,"a\nb, c"\n4,1,gb\n'
    )
    project.put("orders/a.csv", text.encode())
    project.run(spark, "r1")
    bronze = read_table("bronze.orders", lake_root=project.lake.root).sort_values("order_id")
    # Spark's CSV parser stores a line break inside quotes as LF, whichever the file used.
    assert bronze["country"].tolist() == ["de\nnorth", '1 "Quoted" Road', "a\nb, c", "gb"]


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1", "cp1252"])
def test_json_lines_in_a_declared_encoding_are_read(spark, tmp_path, encoding):
    project = Project(tmp_path, LocalFolderObjectStore(tmp_path / "s3"), bucket(), "jsonl")
    sources = project.root / "metadata" / "sources.yaml"
    sources.write_text(
        sources.read_text().replace("format: jsonl", f"format: jsonl\n    encoding: {encoding}")
    )
    project.catalog = load_catalog(project.root, use_cache=False)
    records = [
        {"order_id": 1, "amount": 5, "country": "Österreich"},
        {"order_id": 2, "amount": 7, "country": "Curaçao"},
    ]
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records) + "{broken\n"
    project.put("orders/a.jsonl", text.encode(encoding))
    outcome = project.run(spark, "r1")
    bronze = read_table("bronze.orders", lake_root=project.lake.root).sort_values("order_id")
    assert bronze["country"].tolist() == ["Österreich", "Curaçao"]
    assert outcome.metadata["quarantined_rows"] == 1 and outcome.metadata["records_read"] == 3


def test_a_new_key_late_in_a_json_lines_object_is_drift(spark, tmp_path):
    """Every record's keys are read where the object is, not a sample of the first ones."""
    project = Project(tmp_path, LocalFolderObjectStore(tmp_path / "s3"), bucket(), "jsonl")
    records = [{"order_id": i, "amount": 1, "country": "de"} for i in range(300)]
    records[250]["coupon"] = "LATE"
    project.put("orders/a.jsonl", jsonl(*records))
    with pytest.raises(SchemaDrift) as drift:
        project.run(spark, "r1")
    assert list(drift.value.new_columns) == ["coupon"]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_object_without_a_non_nullable_column_is_set_aside_not_landed_as_nulls(
    spark, tmp_path, fmt
):
    project = Project(tmp_path, LocalFolderObjectStore(tmp_path / "s3"), bucket(), fmt)
    if fmt == "jsonl":
        project.put("orders/a.jsonl", jsonl({"order_id": 1, "amount": 2, "country": "de"}))
        project.put("orders/b.jsonl", jsonl({"amount": 3, "country": "fr"}))  # no order_id
    else:
        project.put("orders/a.csv", (CSV_HEADER + "1,2,de\n").encode())
        project.put("orders/b.csv", b"amount,country\n3,fr\n")
    outcome = project.run(spark, "r1")
    assert read_table("bronze.orders", lake_root=project.lake.root)["order_id"].tolist() == [1]
    (set_aside,) = outcome.metadata["quarantined_object_keys"]
    assert set_aside["key"] == f"orders/b.{fmt}"
    assert set_aside["reason"] == (
        "it lacks the column(s) order_id that sources.yaml declares nullable: false"
    )
    assert any(f"orders/b.{fmt}" in w and "nullable: false" in w for w in project.warned)


def test_every_csv_encoding_a_source_may_declare_is_a_charset_spark_has(spark):
    from medallion_assets.catalog.base import _JAVA_CHARSETS

    charset = spark.sparkContext._jvm.java.nio.charset.Charset
    assert [name for name in _JAVA_CHARSETS.values() if not charset.isSupported(name)] == []


@pytest.fixture(params=["driver", "executors"])
def inspected_on(request, monkeypatch) -> str:
    """Where a small batch is inspected: the driver (the default) or the executors (as a batch
    over ``DRIVER_INSPECTS`` bytes is)."""
    if request.param == "executors":
        monkeypatch.setattr(raw_inspect, "DRIVER_INSPECTS", 0)
    return request.param


def test_an_object_that_cannot_be_read_fails_naming_it_for_healing(spark, tmp_path, inspected_on):
    """A read error (not a missing key), on the driver or an executor, comes back as one error
    naming the object, so healing sees the raw source failed; a key gone since the listing
    stays FileNotFoundError."""
    raw = tmp_path / "raw"
    (raw / "orders" / "a.jsonl").mkdir(parents=True)  # a folder where the object should be
    (raw / "orders" / "b.jsonl").write_text('{"order_id": 1}\n')
    source = Source.model_validate(
        {"system": "s3_raw", "bucket": "raw", "prefix": "orders/", "format": "jsonl"}
        | {"columns": [{"name": "order_id", "type": "bigint"}]}
    )
    sizes = {f"file:{raw}/orders/a.jsonl": 10, f"file:{raw}/orders/b.jsonl": 16}
    with pytest.raises(RawObjectUnreadable) as unreadable:
        inspect_objects(spark, source, sizes)
    message = str(unreadable.value)
    assert message.startswith(f"1 raw object(s) could not be read, first file:{raw}/orders/a.jsonl")
    assert system_of((), message, Places(f"file:{tmp_path}/lake", frozenset(), str(raw))) == SOURCE
    with pytest.raises(FileNotFoundError, match="deleted or replaced since the listing"):
        inspect_objects(spark, source, {f"file:{raw}/orders/gone.jsonl": 3})
    assert inspect_objects(spark, source, {f"file:{raw}/orders/b.jsonl": 16})[
        f"file:{raw}/orders/b.jsonl"
    ].columns == ["order_id"]


def test_the_driver_and_the_executors_inspect_a_batch_alike(spark, tmp_path, monkeypatch):
    """The same objects, inspected on the driver (a small batch) and by the executors (a batch
    over ``DRIVER_INSPECTS``): the same hashes, problems, columns and valueless columns."""
    raw = tmp_path / "raw" / "orders"
    raw.mkdir(parents=True)
    (raw / "a.jsonl").write_text('{"order_id": 1, "note": null}\n{"order_id": 2}\n')
    (raw / "b.jsonl").write_bytes(b'{"order_id": 3, "country": "\xff"}\n')  # not UTF-8
    (raw / "c.jsonl").write_text("[1, 2]\n")  # not JSON lines
    source = Source.model_validate(
        {"system": "s3_raw", "bucket": "raw", "prefix": "orders/", "format": "jsonl"}
        | {"columns": [{"name": "order_id", "type": "bigint"}]}
    )
    sizes = {f"file:{p}": p.stat().st_size for p in sorted(raw.iterdir())}
    on_driver = inspect_objects(spark, source, sizes)
    monkeypatch.setattr(raw_inspect, "DRIVER_INSPECTS", 0)
    by_executors = inspect_objects(spark, source, sizes)
    assert on_driver == by_executors
    assert [bool(on_driver[p].problem) for p in sizes] == [False, True, True]
