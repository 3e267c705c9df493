"""Reading raw objects on real Spark: each row carries its object's URI, ingestion time and
batch, and a read of JSON lines plans no Python: the objects' descriptions are made in the JVM
(from Python rows, the first job would start Python workers, ~1 s of every bronze step)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from medallion_assets.catalog.sources import Source
from medallion_assets.runtime.ingest.raw_read import RawFile, read_objects

pytestmark = pytest.mark.slow


def test_rows_carry_their_objects_description_and_the_read_plans_no_python(spark, tmp_path):
    (tmp_path / "a b.jsonl").write_text('{"order_id": 1, "amount": "5.10"}\n')
    (tmp_path / "c.jsonl").write_text('{"order_id": 2, "amount": "7"}\n{"order_id": 3}\n')
    source = Source.model_validate(
        {
            "system": "s3_raw",
            "bucket": "raw",
            "prefix": "orders/",
            "format": "jsonl",
            "columns": [
                {"name": "order_id", "type": "bigint"},
                {"name": "amount", "type": "decimal(18,2)"},
            ],
        }
    )
    files = [
        RawFile(f"file:{tmp_path / 'a b.jsonl'}", "s3://raw/orders/a b.jsonl", 1_700_000_000, "b1"),
        RawFile(f"file:{tmp_path / 'c.jsonl'}", "s3://raw/orders/c.jsonl", 1_700_000_060.5, "b2"),
    ]
    records = read_objects(spark, source, files, [])
    good, total = records.good, records.total
    assert records.held is not None and records.held.is_cached
    columns = ("order_id", "amount", "_source_file", "_ingested_at", "_batch_id")
    rows = sorted(tuple(r) for r in good.select(*columns).collect())
    assert total == 3
    assert [(r[0], r[2], r[4]) for r in rows] == [
        (1, "s3://raw/orders/a b.jsonl", "b1"),
        (2, "s3://raw/orders/c.jsonl", "b2"),
        (3, "s3://raw/orders/c.jsonl", "b2"),
    ]
    assert [str(r[1]) for r in rows] == ["5.10", "7.00", "None"]
    at = rows[2][3].replace(tzinfo=UTC) if rows[2][3].tzinfo is None else rows[2][3]
    assert at == datetime.fromtimestamp(1_700_000_060.5, UTC)
    plan = good._jdf.queryExecution().executedPlan().toString()
    assert "ExistingRDD" not in plan and "Python" not in plan, plan
    records.release()  # once written: the driver's cache no longer holds them
    assert not records.held.is_cached
