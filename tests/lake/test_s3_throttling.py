"""pyiceberg's reads of the lake on S3 ride out throttling: behind a proxy answering
``503 SlowDown`` to four requests in a row out of every six (S3 throttles in runs), a table's
metadata and data read back whole; pyarrow's own default (3 attempts) gives up. moto's S3
over HTTP, pyiceberg's SQL catalog, no JVM."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog

from medallion_assets.lake.catalog import LakeCatalog, S3Endpoint
from tests.s3_server import S3Server
from tests.slowdown_proxy import slowdown_proxy

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "country": ["gb", "fr", "de"]})


def properties(tmp_path: Path, bucket: str, endpoint: str) -> dict[str, str]:
    lake = LakeCatalog.parse(
        f"sqlite:///{tmp_path}/catalog.db", f"s3://{bucket}/lake", S3Endpoint(endpoint, "us-east-1")
    )
    # pyiceberg makes its own catalog tables here: no Spark in this test
    return lake.pyiceberg_properties() | {"init_catalog_tables": "true"}


@pytest.mark.slow  # moto's S3 server, and backoff waits by design (26 s)
def test_a_table_read_through_a_throttling_s3_comes_back_whole(
    tmp_path: Path, s3_server: S3Server, s3_env: dict[str, str]
):
    bucket = f"lake-{uuid.uuid4().hex[:10]}"
    s3_server.client().create_bucket(Bucket=bucket)
    writer = load_catalog("lake", **properties(tmp_path, bucket, s3_server.endpoint_url))
    writer.create_namespace("silver")
    writer.create_table("silver.orders", ROWS.schema).append(ROWS)

    with slowdown_proxy(s3_server.endpoint_url, every=6, burst=4) as proxy:
        patient = properties(tmp_path, bucket, proxy.url)
        read = load_catalog("lake", **patient).load_table("silver.orders").scan().to_arrow()
        assert read.sort_by("id").equals(ROWS)
        assert proxy.throttled >= 4

        pyarrows_default = {k: v for k, v in patient.items() if "retry" not in k}
        proxy.requests = 0  # the next request starts a run of four 503s
        with pytest.raises(OSError, match=r"(?i)slow ?down|503|SERVICE_UNAVAILABLE"):
            load_catalog("lake", **pyarrows_default).load_table("silver.orders").scan().to_arrow()
