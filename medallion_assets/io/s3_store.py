"""Objects through the S3 API (AWS, or an endpoint: moto, MinIO, SeaweedFS) with boto3, and the
store the settings name (``object_store_of``: S3, or a local folder standing in for it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from medallion_assets.catalog.base import check_bucket
from medallion_assets.credentials import mask_credentials
from medallion_assets.errors import ResourceError
from medallion_assets.io.object_store import (
    CHUNK_SIZE,
    NOT_FOUND,
    PAGE_SIZE,
    Chunks,
    LocalFolderObjectStore,
    OnPage,
    S3Object,
    StreamingStore,
    check_key,
    hadoop_literal,
    no_progress,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.literals import BucketLocationConstraintType
    from mypy_boto3_s3.type_defs import CreateBucketRequestTypeDef, ListObjectsV2RequestTypeDef

    from medallion_assets.settings import MedallionSettings


class S3Unreachable(ResourceError, ConnectionError):
    """The S3 endpoint does not answer (refused, timed out, no such host). A network error may
    clear: a step retries it with its retry policy's backoff, up to the policy's limit."""

    error_code = "S3_UNREACHABLE"
    permanent = False


@contextlib.contextmanager
def _s3_errors(uri: str, endpoint: str | None) -> Iterator[None]:
    """Raise a missing bucket or key as FileNotFoundError, as the local folder store does, and
    an endpoint that does not answer as ``S3Unreachable`` naming it (without credentials)."""
    try:
        yield
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        if code in NOT_FOUND:
            raise FileNotFoundError(f"{uri} does not exist ({code})") from error
        raise
    except BotoConnectionError as error:
        where = mask_credentials(endpoint) if endpoint else "AWS S3"
        raise S3Unreachable(
            f"cannot reach the S3 endpoint {where} (MEDALLION_S3_ENDPOINT) for {uri}: "
            f"{type(error).__name__}. Check that it is up and that MEDALLION_S3_ENDPOINT is its "
            "URL (unset it to read the local folder instead)"
        ) from error


class Boto3ObjectStore(StreamingStore):
    """S3, or an S3 API such as moto's server at ``endpoint_url``, through one boto3 client.

    Credentials come from boto3's standard chain (``AWS_*`` variables, profile, instance role);
    this class never holds, logs or formats them into errors.
    """

    def __init__(
        self,
        endpoint_url: str | None,
        region: str = "us-east-1",
        *,
        page_size: int = PAGE_SIZE,
        chunk_size: int = CHUNK_SIZE,
        max_attempts: int = 10,  # throttling (503 SlowDown) may last; backoff is exponential
        timeout_seconds: float = 60.0,
    ):
        self.endpoint_url, self.region = endpoint_url, region
        self.page_size, self.chunk_size = page_size, chunk_size
        config = Config(
            retries={"max_attempts": max_attempts, "mode": "standard"},
            connect_timeout=min(10.0, timeout_seconds),
            read_timeout=timeout_seconds,
            # Custom endpoints (moto, MinIO) are not DNS names that can take a bucket prefix.
            s3={"addressing_style": "path"} if endpoint_url else {},
        )
        self._client: S3Client = boto3.session.Session().client(
            "s3", endpoint_url=endpoint_url, region_name=region, config=config
        )

    def __repr__(self) -> str:
        """The endpoint's scheme, host and port only: never a user or password."""
        if not self.endpoint_url:
            return "Boto3ObjectStore(AWS S3)"
        url = urlsplit(self.endpoint_url)
        port = f":{url.port}" if url.port else ""
        return f"Boto3ObjectStore({url.scheme}://{url.hostname}{port})"

    def list(
        self, bucket: str, prefix: str = "", *, on_page: OnPage = no_progress
    ) -> list[S3Object]:
        """Every object under ``prefix`` (a string prefix, as in S3), sorted by key."""
        objects: list[S3Object] = []
        request: ListObjectsV2RequestTypeDef = {
            "Bucket": bucket,
            "Prefix": prefix,
            "MaxKeys": self.page_size,
        }
        with _s3_errors(f"s3://{bucket}/{prefix}", self.endpoint_url):
            while True:
                on_page()
                page = self._client.list_objects_v2(**request)
                objects += [
                    S3Object(bucket, item["Key"], item["ETag"].strip('"'), item["Size"])
                    for item in page.get("Contents", ())
                    # Console "folder" markers are not data and have no local file equivalent.
                    if not item["Key"].endswith("/")
                ]
                if not page.get("IsTruncated"):
                    break
                request["ContinuationToken"] = page["NextContinuationToken"]
        return sorted(objects, key=lambda o: o.key)

    def _open(self, bucket: str, key: str) -> tuple[S3Object, Chunks]:
        uri = f"s3://{bucket}/{key}"
        with _s3_errors(uri, self.endpoint_url):
            response = self._client.get_object(Bucket=bucket, Key=key)
        obj = S3Object(bucket, key, response["ETag"].strip('"'), response["ContentLength"])

        def chunks() -> Chunks:
            with contextlib.closing(response["Body"]), _s3_errors(uri, self.endpoint_url):
                yield from response["Body"].iter_chunks(self.chunk_size)

        return obj, chunks()

    def spark_path(self, bucket: str, key: str, size: int = 0) -> str:
        return hadoop_literal(f"s3a://{check_bucket(bucket)}/{check_key(key)}")

    def put(self, bucket: str, key: str, data: bytes) -> S3Object:
        uri = f"s3://{bucket}/{check_key(key)}"
        with _s3_errors(uri, self.endpoint_url):
            response = self._client.put_object(Bucket=bucket, Key=key, Body=data)
        return S3Object(bucket, key, response["ETag"].strip('"'), len(data))

    def ensure_bucket(self, bucket: str) -> None:
        try:
            with _s3_errors(f"s3://{bucket}", self.endpoint_url):
                self._client.head_bucket(Bucket=check_bucket(bucket))
            return
        except FileNotFoundError:
            pass
        request: CreateBucketRequestTypeDef = {"Bucket": bucket}
        if self.region != "us-east-1":  # S3 rejects an explicit us-east-1 location constraint
            region = cast("BucketLocationConstraintType", self.region)
            request["CreateBucketConfiguration"] = {"LocationConstraint": region}
        with (
            contextlib.suppress(self._client.exceptions.BucketAlreadyOwnedByYou),
            _s3_errors(f"s3://{bucket}", self.endpoint_url),
        ):
            self._client.create_bucket(**request)


def object_store_of(settings: MedallionSettings) -> Boto3ObjectStore | LocalFolderObjectStore:
    """S3 when ``MEDALLION_S3_ENDPOINT`` is set or ``MEDALLION_S3=aws``; else the local folder
    standing in for it (``MEDALLION_S3_LOCAL_ROOT``, else ``$MEDALLION_HOME/s3``)."""
    if settings.uses_s3_api:
        return Boto3ObjectStore(settings.s3_endpoint, region=settings.aws_region)
    return LocalFolderObjectStore(settings.s3_root)
