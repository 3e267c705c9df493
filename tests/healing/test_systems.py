"""Which system a failure is in, on the errors real components raise: Spark's s3a reading
moto's S3 over HTTP, and boto3. A missing bucket of the lake is the lake's storage (permanent,
no source marked down); the same error in a raw bucket is a source outage (reroute)."""

from __future__ import annotations

import uuid

import pytest

from medallion_assets.healing.diagnosis import Failure, diagnose
from medallion_assets.healing.systems import Places
from tests.s3_server import S3Server

pytestmark = pytest.mark.slow  # a real Spark session


def _spark_error(spark, path: str) -> BaseException:
    with pytest.raises(Exception) as raised:
        spark.read.parquet(path).count()
    return raised.value


def test_a_missing_lake_bucket_is_the_lakes_storage_not_a_source_outage(spark, demo_catalog):
    lake = f"lake-{uuid.uuid4().hex[:10]}"
    raw = {s.bucket for s in demo_catalog.sources.values()}
    places = Places(f"s3a://{lake}/prod", frozenset(raw))
    error = _spark_error(spark, f"s3a://{lake}/prod/bronze/orders/data")

    failure = Failure.of(error, places)
    diagnosis = diagnose(demo_catalog.healing_rules, failure)

    assert failure.system == "lake"
    assert diagnosis.error_code == "LAKE_STORAGE_MISSING" and diagnosis.permanent
    assert "reroute_source" not in diagnosis.actions  # no source is marked down
    assert "MEDALLION_LAKE_CREATE=1" in diagnosis.fix


def test_the_same_error_in_a_raw_bucket_is_a_source_outage(spark, demo_catalog):
    raw = f"raw-{uuid.uuid4().hex[:10]}"
    places = Places("s3a://some-lake/prod", frozenset({raw}))
    error = _spark_error(spark, f"s3a://{raw}/orders/part-0.jsonl")

    failure = Failure.of(error, places)
    diagnosis = diagnose(demo_catalog.healing_rules, failure)

    assert failure.system == "source"
    assert diagnosis.error_code == "SOURCE_UNAVAILABLE" and diagnosis.then == "reroute"


def test_boto3s_missing_bucket_names_its_system(s3_server: S3Server, s3_env, demo_catalog):
    from medallion_assets.io.s3_store import Boto3ObjectStore

    store = Boto3ObjectStore(s3_server.endpoint_url)
    raw = f"raw-{uuid.uuid4().hex[:10]}"
    with pytest.raises(FileNotFoundError) as raised:
        store.list(raw, "orders/")
    places = Places("s3a://some-lake/prod", frozenset({raw}))
    assert Failure.of(raised.value, places).system == "source"
    lake_places = Places(f"s3a://{raw}/lake", frozenset({"other"}))
    assert Failure.of(raised.value, lake_places).system == "lake"
