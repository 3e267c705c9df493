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
