"""Preflight's S3 probes: where the AWS credentials come from, whether a bucket is there, and
whether the lake's bucket takes a write. Each probe is a few requests with short timeouts and
S3's own retry of throttling (``standard`` mode retries 503 SlowDown with backoff), so a
misconfigured endpoint is said in seconds.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

import boto3
import botocore.exceptions
import botocore.session
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)

from medallion_assets.credentials import mask_credentials

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.type_defs import CreateBucketConfigurationTypeDef

# botocore's names of where it found credentials, as a person reads them.
_SOURCES = {
    "env": "the environment (AWS_ACCESS_KEY_ID)",
    "shared-credentials-file": "the shared credentials file (~/.aws/credentials)",
    "config-file": "the AWS config file (~/.aws/config)",
    "iam-role": "the instance's IAM role",
    "container-role": "the container's IAM role",
    "assume-role": "an assumed role (AWS_PROFILE)",
    "assume-role-with-web-identity": "a web identity (AWS_WEB_IDENTITY_TOKEN_FILE)",
    "sso": "AWS SSO (AWS_PROFILE)",
    "custom-process": "a credential process (~/.aws/config)",
}
NO_CREDENTIALS = (
    "no AWS credentials were found for S3: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
    "or AWS_PROFILE, or run where an IAM role is attached (any values do for a local "
    "stand-in such as moto)"
)

BucketState = Literal["there", "missing", "denied", "unreachable", "error"]


@dataclass(frozen=True)
class Probe:
    """What a request found: the bucket's state and, when not there, why in a few words."""

    state: BucketState
    detail: str = ""


def credentials_source() -> str | None:
    """Where the AWS chain finds credentials (never their value), or None when it finds none.
    Raises ValueError naming a profile that does not exist."""
    try:
        found = botocore.session.get_session().get_credentials()
    except botocore.exceptions.ProfileNotFound as error:
        raise ValueError(f"{error}: set AWS_PROFILE to a profile of ~/.aws/config") from None
    if found is None:
        return None
    return _SOURCES.get(found.method, found.method)


def client(endpoint: str | None, region: str) -> S3Client:
    """A boto3 S3 client for probes: short timeouts, throttling retried with backoff."""
    config = Config(
        connect_timeout=3,
        read_timeout=5,
        retries={"max_attempts": 3, "mode": "standard"},
        s3={"addressing_style": "path"} if endpoint else {},
    )
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, region_name=region, config=config
    )


def bucket(s3: S3Client, name: str) -> Probe:
    """Whether bucket ``name`` is there for these credentials."""
    return _request(lambda: s3.head_bucket(Bucket=name))


def create_bucket(s3: S3Client, name: str, region: str) -> Probe:
    if region == "us-east-1":  # S3 rejects an explicit us-east-1 location constraint
        return _request(lambda: s3.create_bucket(Bucket=name))
    where = cast("CreateBucketConfigurationTypeDef", {"LocationConstraint": region})
    return _request(lambda: s3.create_bucket(Bucket=name, CreateBucketConfiguration=where))


def writable(s3: S3Client, name: str, prefix: str) -> Probe:
    """Put, then delete, one small object under ``prefix``: whether the lake takes writes."""
    key = f"{prefix.strip('/')}/_medallion_preflight/{uuid.uuid4().hex}".lstrip("/")
    put = _request(lambda: s3.put_object(Bucket=name, Key=key, Body=b"preflight"))
    if put.state != "there":
        return put
    return _request(lambda: s3.delete_object(Bucket=name, Key=key))


def _request(call: object) -> Probe:
    try:
        call()  # type: ignore[operator]
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code in ("404", "NoSuchBucket", "NotFound"):
            return Probe("missing", code)
        if code in ("403", "AccessDenied", "Forbidden", "InvalidAccessKeyId") or status == 403:
            return Probe("denied", code or "403")
        return Probe("error", mask_credentials(f"{code or status}: {error}"))
    except (EndpointConnectionError, ConnectTimeoutError, ReadTimeoutError) as error:
        return Probe("unreachable", type(error).__name__)
    except BotoCoreError as error:
        return Probe("error", mask_credentials(f"{type(error).__name__}: {error}"))
    return Probe("there")
