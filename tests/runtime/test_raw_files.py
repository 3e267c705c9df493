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

from medallion_assets.catalog.models import Source
from medallion_assets.control.legacy_state import import_legacy_state
from medallion_assets.runtime.raw_files import (
    column_name_problem,
    columns_problem,
    file_columns,
    land,
    land_text,
)
from medallion_assets.runtime.schema_drift import (
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


def written(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_utf16_csv_in_a_utf8_source_is_not_text(tmp_path: Path):
    with_bom = written(tmp_path, "bom.csv", ORDERS_CSV.encode("utf-16"))
    digest, problem = land(with_bom, source())
    assert problem is not None and "not valid utf-8 (byte 0, line 1)" in problem
    assert "declare the source's encoding" in problem
    assert digest == hashlib.sha256(ORDERS_CSV.encode("utf-16")).hexdigest()
    # Without a BOM, UTF-16 of ASCII text is valid UTF-8 full of NULs.
    no_bom = written(tmp_path, "le.csv", ORDERS_CSV.encode("utf-16-le"))
    _, problem = land(no_bom, source())
    assert problem == "it holds NUL characters (line 1): not utf-8 text (UTF-16, or a binary file?)"


def test_a_declared_encoding_is_decoded_and_landed_as_utf8(tmp_path: Path):
    text = "order_id,amount,country\n1,5,Österreich\n"
    path = written(tmp_path, "latin.csv", text.encode("latin-1"))
    digest, problem = land(path, source(encoding="latin-1"))
    assert problem is None
    assert digest == hashlib.sha256(text.encode("latin-1")).hexdigest()  # of the raw object
    assert path.read_bytes() == text.encode("utf-8")
    utf16 = written(tmp_path, "utf16.csv", text.encode("utf-16"))
    assert land(utf16, source(encoding="utf-16"))[1] is None
    assert utf16.read_text(encoding="utf-8") == text
    assert file_columns(utf16, source(encoding="utf-16")) == ["order_id", "amount", "country"]


def test_invalid_bytes_are_located_and_the_file_is_left_as_it_was(tmp_path: Path):
    data = b"order_id,amount,country\n1,5,de\n2,7,fr\xe9nce\n"
    path = written(tmp_path, "bad.csv", data)
    _, problem = land_text(path, "utf-8")
    assert problem is not None and "(byte 37, line 3)" in problem
    truncated = written(tmp_path, "cut.csv", "a,é".encode()[:-1])
    assert "not valid utf-8" in str(land_text(truncated, "utf-8")[1])
    latin = written(tmp_path, "latin.csv", data)
    assert land_text(latin, "ascii")[1] is not None
    assert latin.read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "cut.csv", "latin.csv"]


def test_empty_and_truncated_parquet_objects_are_not_parquet(tmp_path: Path):
    buffer = io.BytesIO()
    pq.write_table(pa.table({"order_id": [1, 2], "amount": [5, 7]}), buffer)
    good = written(tmp_path, "good.parquet", buffer.getvalue())
    assert land(good, source("parquet"))[1] is None
    empty = written(tmp_path, "empty.parquet", b"")
    assert land(empty, source("parquet"))[1] == "it is empty (0 bytes): not a Parquet file"
    cut = written(tmp_path, "cut.parquet", buffer.getvalue()[:-20])
    problem = land(cut, source("parquet"))[1]
    assert problem is not None and problem.startswith("it is not a readable Parquet file (")


def test_a_json_array_is_not_json_lines(tmp_path: Path):
    array = written(tmp_path, "array.jsonl", b'[{"order_id": 1},\n {"order_id": 2}]\n')
    with pytest.raises(ValueError, match="not JSON lines"):
        file_columns(array, source("jsonl"))
    lines = written(tmp_path, "ok.jsonl", b'{"order_id": 1}\n{broken\n\n{"coupon": "X"}\n')
    assert file_columns(lines, source("jsonl")) == ["order_id", "coupon"]


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
