"""The tested production shape: Iceberg's JDBC catalog on a PostgreSQL server, the warehouse on
S3 (moto's server on 127.0.0.1) through s3a, credentials from the AWS chain; pyiceberg reads
the same table through the same catalog."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from medallion_assets.lake import tables, versions
from medallion_assets.lake.catalog import LakeCatalog
from tests.lake.conftest import lake_session, moto_endpoint
from tests.postgres_server import PostgresServer
from tests.s3_server import S3Server

pytestmark = pytest.mark.slow


@pytest.fixture
def s3_lake(
    spark: Any, postgres_server: PostgresServer, s3_server: S3Server, s3_env: dict[str, str]
) -> tuple[Any, LakeCatalog]:
    bucket = f"lake-{uuid.uuid4().hex[:8]}"
    s3_server.client().create_bucket(Bucket=bucket)
    # The Spark JVM reads the AWS chain too: here its system properties (no key in any setting).
    system = spark.sparkContext._jvm.java.lang.System
    system.setProperty("aws.accessKeyId", s3_env["AWS_ACCESS_KEY_ID"])
    system.setProperty("aws.secretAccessKey", s3_env["AWS_SECRET_ACCESS_KEY"])
    lake = LakeCatalog.parse(
        postgres_server.dsn, f"s3://{bucket}/warehouse", moto_endpoint(s3_server.endpoint_url)
    )
    return lake_session(spark, lake), lake


def test_a_table_on_s3_catalogued_in_postgresql_publishes_and_reads_back_everywhere(
    s3_lake: tuple[Any, LakeCatalog], s3_server: S3Server
):
    spark, lake = s3_lake
    table = f"gold.revenue_{uuid.uuid4().hex[:6]}"
    frame = spark.createDataFrame([("EU", 10.5), ("US", 20.0)], "region string, revenue double")
    staged = tables.stage(
        spark, frame, table, mode="replace", properties={"run-id": "r1"}, refs=spark.medallion_refs
    )
    assert spark.table(tables.identifier(table)).count() == 0  # staged, not published
    tables.publish(spark, staged, spark.medallion_refs)
    bucket = lake.warehouse.removeprefix("s3a://").split("/")[0]
    keys = [o["Key"] for o in s3_server.client().list_objects_v2(Bucket=bucket)["Contents"]]
    assert any(key.endswith(".parquet") for key in keys)
    assert any(key.endswith(".metadata.json") for key in keys)
    arrow = versions.read(versions.open_catalog(lake), table)
    assert sorted(arrow.to_pylist(), key=lambda r: r["region"]) == [
        {"region": "EU", "revenue": 10.5},
        {"region": "US", "revenue": 20.0},
    ]


def test_on_s3_and_postgresql_a_lost_file_is_found_orphans_collected_and_metadata_repaired(
    s3_lake: tuple[Any, LakeCatalog], s3_server: S3Server
):
    """The production shape of `doctor --deep`, `table gc` and `table repair`: every file
    listed and checked on S3, the catalog's pointer read from and written to PostgreSQL."""
    from medallion_assets.lake import Lake
    from medallion_assets.lake.repair import LostMetadata

    spark, lake = s3_lake
    table = f"silver.orders_{uuid.uuid4().hex[:6]}"
    for rows in ([(1, "EU")], [(1, "EU"), (2, "US")]):
        frame = spark.createDataFrame(rows, "id int, region string")
        staged = tables.stage(spark, frame, table, mode="replace", refs=spark.medallion_refs)
        tables.publish(spark, staged, spark.medallion_refs)
    s3 = s3_server.client()
    bucket = lake.warehouse.removeprefix("s3a://").split("/")[0]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"]]
    folder = next(k for k in keys if "/data/" in k).split("/data/")[0]
    s3.put_object(Bucket=bucket, Key=f"{folder}/data/killed-build.parquet", Body=b"PAR1")
    on_lake = Lake(lake)

    orphans = on_lake.orphans(table, older_than_s=0)
    # spelled as the table's location spells it (Spark's s3a)
    assert [o.path for o in orphans] == [f"s3a://{bucket}/{folder}/data/killed-build.parquet"]
    assert on_lake.remove_orphans(table, orphans) == 4
    assert on_lake.orphans(table, older_than_s=0) == []
    assert on_lake.doubt(table, every_file=True) == ""

    metadata = sorted(k for k in keys if k.endswith(".metadata.json") and k.startswith(folder))
    s3.delete_object(Bucket=bucket, Key=metadata[-1])
    with pytest.raises(LostMetadata, match=r"its current metadata file .* is gone"):
        on_lake.doubt(table)
    lost, now = on_lake.repair(table)
    assert lost.endswith(metadata[-1]) and now.endswith(metadata[-2])
    assert versions.read(versions.open_catalog(lake), table).num_rows >= 1
