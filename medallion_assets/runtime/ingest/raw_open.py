"""A raw object opened where Spark runs, to be read a few MB at a time: a local file, or
pyarrow's S3 client speaking to the S3 API Spark's s3a speaks to. It runs on the executors,
so it needs only the standard library and pyarrow (``raw_read`` ships it with the job)."""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyarrow import NativeFile

READ_SIZE = 4 * 1024 * 1024  # bytes read at a time from an object: what a worker holds of it


class RawObjectUnreadable(OSError):
    """Raw objects an executor could not read (a network error, access denied, throttling
    that outlasted the retries): the message names the first as ``s3://bucket/key``, so
    healing knows the raw source failed and the policies' message rules classify it."""


def open_object(
    path: str, s3: tuple[str, str] | None, *, random_access: bool = False
) -> NativeFile:
    """A binary file of the object at Spark path ``path``: a local file, or pyarrow's S3 client
    with the credentials of the AWS chain (as Spark's s3a) and backoff on throttling."""
    # pyarrow: loaded where an object is read (an executor)
    from urllib.parse import urlsplit

    from pyarrow import fs

    if path.startswith("file:"):
        return fs.LocalFileSystem().open_input_file(re.sub(r"^file:(//)?", "", path))
    if not path.startswith(("s3a://", "s3://", "s3n://")):
        return fs.LocalFileSystem().open_input_file(path)
    where = path.split("://", 1)[1]
    options: dict[str, Any] = {
        "retry_strategy": fs.AwsStandardS3RetryStrategy(max_attempts=10),
        "connect_timeout": 10,
        "request_timeout": 60,
    }
    if s3 is not None:
        url = urlsplit(s3[0])
        options |= {"endpoint_override": url.netloc, "scheme": url.scheme or "https"}
        options["region"] = s3[1]
    else:
        # Else the AWS chain's region, and S3's own error if it is the wrong one.
        with contextlib.suppress(OSError):
            options["region"] = fs.resolve_s3_region(where.split("/", 1)[0])
    s3fs = fs.S3FileSystem(**options)
    return s3fs.open_input_file(where) if random_access else s3fs.open_input_stream(where)
