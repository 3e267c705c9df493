"""A source that lists none of, or fewer of, the objects ingested from it (an outage, a
lifecycle rule, a permission or prefix change) never shrinks bronze: an empty listing is an
outage that changes nothing, objects gone since their ingest keep their rows and are
reported, and a rebuild that would need them is refused, publishing nothing. On moto's S3
server, objects deleted and put back."""

from __future__ import annotations

import json

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.io.s3_store import Boto3ObjectStore
from medallion_assets.runtime.ingest.source_objects import SourceUnavailable
from medallion_assets.testing import read_table
from tests.runtime.test_ingest_bad_input import Project, bucket

pytestmark = pytest.mark.slow


def records(*ids: int) -> bytes:
    return "".join(
        json.dumps({"order_id": i, "amount": i, "country": "DE"}) + "\n" for i in ids
    ).encode()


def order_ids(project: Project) -> list[int]:
    frame = read_table("bronze.orders", lake_root=project.lake.root)
    return sorted(int(i) for i in frame["order_id"])


def test_an_emptied_or_shrunken_source_never_shrinks_bronze(spark, tmp_path, s3_env, s3_server):
    project = Project(tmp_path, Boto3ObjectStore(s3_server.endpoint_url), bucket(), "jsonl")
    project.put("orders/a.jsonl", records(1, 2))
    project.put("orders/b.jsonl", records(3))
    project.run(spark, "first")
    assert order_ids(project) == [1, 2, 3]
    client = s3_server.client()
    saved = {}
    for key in ("orders/a.jsonl", "orders/b.jsonl"):
        saved[key] = client.get_object(Bucket=project.bucket, Key=key)["Body"].read()
        client.delete_object(Bucket=project.bucket, Key=key)

    with pytest.raises(SourceUnavailable, match=r"lists none of the 2 object\(s\) ingested"):
        project.run(spark, "outage")
    assert order_ids(project) == [1, 2, 3]  # nothing published

    # One object is back, the other stays gone, and a new one lands: appended, nothing lost.
    client.put_object(Bucket=project.bucket, Key="orders/a.jsonl", Body=saved["orders/a.jsonl"])
    project.put("orders/c.jsonl", records(4))
    outcome = project.run(spark, "partial")
    assert outcome.metadata["bronze_write"] == "append"
    assert order_ids(project) == [1, 2, 3, 4]
    assert (outcome.metadata["rows_written"], outcome.build.version.rows) == (1, 4)  # new row
    (warning,) = [w for w in project.warned if w.startswith("missing at source")]
    assert "1 object(s) ingested before are no longer under" in warning
    assert "orders/b.jsonl" in warning and "their rows stay in bronze.orders" in warning
    audit = project.control.audit()
    assert any(e.kind == "missing" and "orders/b.jsonl" in e.message for e in audit)

    # A rebuild (changed bronze SQL) would need the missing object: refused, nothing published.
    sql = project.root / "sql" / "bronze" / "orders.sql"
    sql.write_text(sql.read_text().replace("FROM raw.orders", "FROM raw.orders WHERE amount >= 0"))
    project.catalog = load_catalog(project.root, use_cache=False)
    with pytest.raises(SourceUnavailable, match="must be rebuilt from its raw objects"):
        project.run(spark, "rebuild")
    assert order_ids(project) == [1, 2, 3, 4]


def test_a_source_whose_deletes_propagate_loses_the_rows_of_deleted_objects_as_an_audited_change(
    spark, tmp_path, s3_env, s3_server
):
    project = Project(tmp_path, Boto3ObjectStore(s3_server.endpoint_url), bucket(), "jsonl")
    sources = project.root / "metadata" / "sources.yaml"
    sources.write_text(
        sources.read_text().replace("    columns:", "    deletes: propagate\n    columns:")
    )
    project.catalog = load_catalog(project.root, use_cache=False)
    project.put("orders/a.jsonl", records(1, 2))
    project.put("orders/b.jsonl", records(3))
    project.run(spark, "first")
    client = s3_server.client()
    client.delete_object(Bucket=project.bucket, Key="orders/b.jsonl")

    outcome = project.run(spark, "one-deleted")
    assert outcome.metadata["bronze_write"] == "rebuild"
    assert order_ids(project) == [1, 2]
    (warning,) = [w for w in project.warned if w.startswith("deletes propagated")]
    assert "1 object(s) gone from" in warning and "orders/b.jsonl" in warning
    deletes = [e for e in project.control.audit() if e.kind == "delete"]
    assert len(deletes) == 1 and deletes[0].details["objects"] == ["orders/b.jsonl"]
    assert "orders/b.jsonl" not in project.state.manifest("orders", None)

    client.delete_object(Bucket=project.bucket, Key="orders/a.jsonl")  # all gone: applied too
    project.run(spark, "all-deleted")
    assert order_ids(project) == []
    project.put("orders/b.jsonl", records(3))  # back: a new object, ingested again
    project.run(spark, "back")
    assert order_ids(project) == [3]
