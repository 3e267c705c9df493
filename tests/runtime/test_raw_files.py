"""Raw objects at the door, without Spark: strict decoding in the declared encoding, Parquet
footers, column names that may (not) become columns, and the evolved-schema state that only
ever holds names Spark and the warehouse can take."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medallion_assets.catalog.sources import Source
from medallion_assets.control.legacy_state import import_legacy_state
from medallion_assets.runtime.ingest import raw_files
from medallion_assets.runtime.ingest.raw_files import (
    column_name_problem,
    columns_problem,
    inspect,
    inspect_chunks,
    inspect_path,
)
from medallion_assets.runtime.ingest.raw_open import READ_SIZE
from medallion_assets.runtime.ingest.schema_drift import (
    evolve,
    evolved_columns,
    read_evolved,
    revert,
)

ORDERS_CSV = "order_id,amount,country\n1,5,de\n2,7,fr\n"


def source(format: str = "csv", **extra: object) -> Source:
    return Source.model_validate(
        {
            "system": "s3_raw",
            "bucket": "raw-bucket",
            "prefix": "orders/",
            "format": format,
            "columns": [
                {"name": "order_id", "type": "bigint"},
                {"name": "amount", "type": "int"},
                {"name": "country"},
            ],
            **extra,
        }
    )


def test_a_utf16_csv_in_a_utf8_source_is_not_text():
    data = ORDERS_CSV.encode("utf-16")
    digest, problem, columns, _ = inspect(data, "csv", "utf-8", True)
    assert problem is not None and "not valid utf-8 (byte 0, line 1)" in problem
    assert "declare the source's encoding" in problem
    assert digest == hashlib.sha256(data).hexdigest() and columns is None
    # Without a BOM, UTF-16 of ASCII text is valid UTF-8 full of NULs.
    problem = inspect(ORDERS_CSV.encode("utf-16-le"), "csv", "utf-8", True).problem
    assert problem == "it holds NUL characters (line 1): not utf-8 text (UTF-16, or a binary file?)"


def test_a_declared_encoding_is_decoded():
    text = "order_id,amount,country\n1,5,Österreich\n"
    digest, problem, columns, _ = inspect(text.encode("latin-1"), "csv", "latin-1", True)
    assert problem is None and columns == ["order_id", "amount", "country"]
    assert digest == hashlib.sha256(text.encode("latin-1")).hexdigest()  # of the raw object
    assert inspect(text.encode("utf-16"), "csv", "utf-16", True)[1:3] == (
        None,
        ["order_id", "amount", "country"],
    )
    # A UTF-8 byte order mark is not part of the first column's name.
    assert inspect(text.encode("utf-8-sig"), "csv", "utf-8", True)[2] == [
        "order_id",
        "amount",
        "country",
    ]


def test_invalid_bytes_are_located():
    data = b"order_id,amount,country\n1,5,de\n2,7,fr\xe9nce\n"
    problem = inspect(data, "csv", "utf-8", True)[1]
    assert problem is not None and "(byte 37, line 3)" in problem
    assert "not valid utf-8" in str(inspect("a,é".encode()[:-1], "csv", "utf-8", True)[1])
    assert inspect(data, "csv", "ascii", True)[1] is not None


def test_a_csv_header_may_quote_its_names_and_a_headerless_file_names_none():
    data = b'"order id","amount\nEUR",country\n1,5,de\n'
    assert inspect(data, "csv", "utf-8", True)[2] == ["order id", "amount\nEUR", "country"]
    assert inspect(data, "csv", "utf-8", False)[1:3] == (None, None)


def test_empty_and_truncated_parquet_objects_are_not_parquet():
    buffer = io.BytesIO()
    pq.write_table(pa.table({"order_id": [1, 2], "amount": [5, 7]}), buffer)
    assert inspect(buffer.getvalue(), "parquet", "utf-8", False)[1:3] == (
        None,
        ["order_id", "amount"],
    )
    assert inspect(b"", "parquet", "utf-8", False)[1] == (
        "it is empty (0 bytes): not a Parquet file"
    )
    problem = inspect(buffer.getvalue()[:-20], "parquet", "utf-8", False)[1]
    assert problem is not None and problem.startswith("it is not a readable Parquet file (")


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_empty_or_compressed_text_object_is_set_aside_saying_which(fmt: str):
    import bz2
    import gzip
    import lzma

    assert inspect(b"", fmt, "utf-8", True)[1] == (
        "it is empty (0 bytes): a delivery that carries no records"
    )
    for data, kind in (
        (gzip.compress(b"a,b\n1,2\n"), "gzip"),
        (bz2.compress(b"a,b\n"), "bzip2"),
        (lzma.compress(b"a,b\n"), "xz"),
    ):
        problem = inspect(data, fmt, "utf-8", True)[1]
        assert problem == (
            f"it is {kind}-compressed, but the source declares uncompressed {fmt}: deliver it "
            "uncompressed"
        )
    assert inspect(b"BZh,col\n1,2\n", "csv", "utf-8", True)[1] is None  # text that looks like it


def test_a_json_array_is_not_json_lines():
    array = b'[{"order_id": 1},\n {"order_id": 2}]\n'
    assert "not JSON lines" in str(inspect(array, "jsonl", "utf-8", False)[1])
    lines = b'{"order_id": 1}\n{broken\n\n{"coupon": "X"}\n'
    assert inspect(lines, "jsonl", "utf-8", False)[1:3] == (None, ["order_id", "coupon"])


def test_every_json_record_names_its_keys_and_a_deep_record_is_only_malformed():
    records = [{"order_id": i} for i in range(500)] + [{"order_id": 500, "late": True}]
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    assert inspect(data, "jsonl", "utf-8", False)[2] == ["order_id", "late"]
    deep = b'{"a": ' * 5000 + b"1" + b"}" * 5000
    with_deep = b'{"order_id": 1}\n' + deep + b"\n"
    assert inspect(with_deep, "jsonl", "utf-8", False)[1:3] == (None, ["order_id"])


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("coupon", None),
        ("Delivery Notes", None),
        ("a`b", "it has a backtick"),
        ("\x00\x00", "it has a NUL, control or invisible character"),
        ("a\nb", "it has a NUL, control or invisible character"),
        ("\ufeffid", "it has a NUL, control or invisible character"),
        ("", "it is empty"),
        (" x", "it starts or ends with white space"),
        ("x" * 128, "it is longer than 127 bytes"),
        ("_source_file", "it is a column ingest adds itself"),
        ("_METADATA", "it is a column ingest adds itself"),
    ],
)
def test_column_names_that_cannot_be_columns(name: str, problem: str | None):
    assert column_name_problem(name) == problem


def test_a_garbage_header_is_not_drift():
    known = ["order_id", "amount", "country"]
    assert columns_problem(["order_id", "coupon", "amount"], known) is None
    assert "cannot be a column name" in str(columns_problem(["order_id", "\x00\x00\x00"], known))
    assert "differs only in case" in str(columns_problem(["order_id", "Amount"], known))
    assert "have the same name" in str(columns_problem(["order_id", "x", "X"], known))
    headerless = columns_problem(["1", "5", "de"], known)
    assert headerless is not None and "a headerless file or another feed's file?" in headerless


def test_evolve_refuses_a_name_spark_cannot_take_and_stores_nothing(control_state):
    state = control_state
    with pytest.raises(ValueError, match="refusing to evolve column 'a`b': it has a backtick"):
        evolve(state, "orders", {"coupon": ["b.jsonl"], "a`b": ["b.jsonl"]}, "run-1")
    assert read_evolved(state, "orders") == []
    assert state.store.audit() == []  # nothing stored, nothing audited
    assert evolve(state, "orders", {"coupon": ["b.jsonl"]}, "run-1") == ["coupon"]
    assert evolve(state, "orders", ["Coupon"], "run-2") == []  # Spark's names ignore case
    (column,) = read_evolved(state, "orders")
    assert (column.name, column.run_id, column.files) == ("coupon", "run-1", ("b.jsonl",))
    (entry,) = state.store.audit()
    assert (entry.kind, entry.entity, entry.run_id) == ("schema", "source:orders", "run-1")
    assert entry.details == {"added": ["coupon"]}


def test_stored_names_from_before_the_check_are_ignored_and_can_be_reverted(
    tmp_path: Path, control_state
):
    state = control_state
    legacy = tmp_path / "lake" / "_state"  # an earlier version stored names unchecked
    legacy.mkdir(parents=True)
    poisoned = [{"name": "\x01\x01id", "type": "string"}, {"name": "coupon", "type": "string"}]
    (legacy / "schema__orders.json").write_text(json.dumps({"columns": poisoned}))
    assert import_legacy_state(state.store, tmp_path / "lake") == 1
    warnings: list[str] = []
    assert evolved_columns(state, "orders", warnings.append) == [("coupon", "string")]
    assert "ignored evolved column '\\x01\\x01id' of source orders" in warnings[0]
    with pytest.raises(ValueError, match="has no evolved column"):
        revert(state, "orders", ["nope"])
    assert revert(state, "orders", ["\x01\x01id"]) == ["\x01\x01id"]
    assert [c.name for c in read_evolved(state, "orders")] == ["coupon"]
    assert revert(state, "orders") == ["coupon"]
    assert read_evolved(state, "orders") == []


def test_columns_without_a_value_in_any_record_are_named_in_every_format():
    jsonl = b'{"id": 1, "status": null}\n{"id": 2}\n{"id": 3, "note": "x"}\n'
    assert inspect(jsonl, "jsonl", "utf-8", False).valueless == ["status"]
    text = b'id,status,note\n1,,"a\nb"\n2,,\n'
    assert inspect(text, "csv", "utf-8", True).valueless == ["status"]
    buffer = io.BytesIO()
    table = pa.table({"id": [1, 2], "status": pa.array([None, None], pa.string())})
    pq.write_table(table, buffer, row_group_size=1)
    assert inspect(buffer.getvalue(), "parquet", "utf-8", False).valueless == ["status"]


def test_a_large_json_lines_object_is_inspected_a_line_at_a_time():
    """An object of hundreds of MB must not be held again as text (or as a list of its lines)
    beside its bytes: inspecting 20 MB allocates well under a MB more."""
    import tracemalloc

    record = {"order_id": 1, "amount": 5, "country": "DE", "note": "x" * 150}
    data = "".join(json.dumps({**record, "order_id": i}) + "\n" for i in range(100_000)).encode()
    data += b'{"order_id": 0, "coupon": "LATE"}\n'  # a key on the last line still counts
    assert len(data) > 20_000_000
    tracemalloc.start()
    try:
        found = inspect(data, "jsonl", "utf-8", False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found.problem is None and found.columns[-1] == "coupon"
    assert peak < 1_000_000, f"{peak:,} bytes allocated to inspect {len(data):,}"


def _big_jsonl(path: Path) -> bytes:
    record = {"order_id": 1, "amount": 5, "country": "DE", "note": "x" * 150}
    data = "".join(json.dumps({**record, "order_id": i}) + "\n" for i in range(200_000)).encode()
    data += b'{"order_id": 0, "coupon": "LATE"}'  # the last line has no line end
    path.write_bytes(data)
    return data


def test_an_object_is_inspected_from_its_path_a_few_mb_at_a_time(tmp_path):
    """Where Spark runs, the object is read from its path in ``READ_SIZE`` pieces: a 40 MB
    object costs the worker a few of them, never the object (the JVM passes only the path)."""
    import tracemalloc

    path = tmp_path / "a b[1].jsonl"
    data = _big_jsonl(path)
    assert len(data) > 40_000_000
    tracemalloc.start()
    try:
        found = inspect_path(f"file:{path}", "jsonl", "utf-8", False, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found is not None and found.sha256 == hashlib.sha256(data).hexdigest()
    assert found.problem is None and found.columns == [
        "order_id",
        "amount",
        "country",
        "note",
        "coupon",
    ]
    assert peak < 5 * READ_SIZE < len(data) / 2, (
        f"{peak:,} bytes allocated to inspect {len(data):,}"
    )
    assert inspect_path(f"file:{tmp_path}/gone.jsonl", "jsonl", "utf-8", False, None) is None


@pytest.mark.slow  # moto's S3 server
def test_an_object_on_s3_is_inspected_through_the_s3_api(tmp_path, s3_env, s3_server):
    """pyarrow's S3 client, pointed where s3a is (the endpoint and region, credentials from the
    AWS chain), reads the object on the executor: same hash, footer and columns as in memory;
    a key that is gone is None, not an error."""
    import boto3

    client = boto3.client("s3", endpoint_url=s3_server.endpoint_url)
    client.create_bucket(Bucket="inspect-raw")
    data = _big_jsonl(tmp_path / "a.jsonl")[:5_000_000].rsplit(b"\n", 1)[0] + b"\n"
    client.put_object(Bucket="inspect-raw", Key="orders/a.jsonl", Body=data)
    frame = pa.table({"order_id": [1, 2], "status": pa.array([None, None], pa.string())})
    buffer = io.BytesIO()
    pq.write_table(frame, buffer)
    client.put_object(Bucket="inspect-raw", Key="orders/b.parquet", Body=buffer.getvalue())
    s3 = (s3_server.endpoint_url, s3_env["AWS_DEFAULT_REGION"])

    found = inspect_path("s3a://inspect-raw/orders/a.jsonl", "jsonl", "utf-8", False, s3)
    assert found == inspect(data, "jsonl", "utf-8", False)
    parquet = inspect_path("s3a://inspect-raw/orders/b.parquet", "parquet", "utf-8", False, s3)
    assert parquet == inspect(buffer.getvalue(), "parquet", "utf-8", False)
    assert parquet is not None and parquet.valueless == ["status"]
    assert inspect_path("s3a://inspect-raw/orders/gone", "jsonl", "utf-8", False, s3) is None


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32-le"])
def test_lines_split_across_reads_decode_as_one_text(encoding):
    """A character or a line end cut between two reads is still one character, one line."""
    text = "order_id,country\n1,Österreich\r\n2,Curaçao\n3,日本"
    data = text.encode(encoding)
    pieces = [data[i : i + 3] for i in range(0, len(data), 3)]
    assert inspect_chunks(pieces, "csv", encoding, True) == inspect(data, "csv", encoding, True)
    assert "".join(raw_files._lines(pieces, encoding)) == text
    problem = inspect_chunks([b"a,b\n1,2\n", b"3,\xff"], "csv", "utf-8", True).problem
    assert problem is not None and "(byte 10, line 3)" in problem
