"""Object storage for raw sources: S3 via boto3, a local folder standing in for S3, throttling.

All stores share one protocol (``ObjectStore``), so the bronze extract runs unchanged against
AWS S3, moto's S3 server in tests, or a folder on disk (the embedded default)::

    store = ThrottledS3(object_store_of(settings), throttle)  # throttles.throttle
    for obj in store.list("vendor-feeds", "orders/dt=2024-05-01/"):
        spark.read.json(store.spark_path(obj.bucket, obj.key))  # read where Spark runs

Bronze ingest lists on the driver and has Spark's executors read each object at its
``spark_path`` (``s3a://`` for S3, ``file:`` for the local folder): no raw byte passes through
the driver. ``download`` and ``read`` serve the tools that do want a copy (the demo, tests).

Keys are checked before they touch a local path, so a hostile key such as ``../../etc/x`` is
refused instead of writing outside the destination folder. Downloads go to a temporary file
beside the destination and are renamed into place, so a partial download is never visible.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast
from urllib.parse import urlsplit

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from medallion_assets.catalog.base import check_bucket
from medallion_assets.credentials import mask_credentials
from medallion_assets.errors import ResourceError

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_s3.literals import BucketLocationConstraintType
    from mypy_boto3_s3.type_defs import CreateBucketRequestTypeDef, ListObjectsV2RequestTypeDef

    from medallion_assets.settings import MedallionSettings

CHUNK_SIZE = 1024 * 1024
PAGE_SIZE = 1000  # the most keys S3 returns per ListObjectsV2 page
_PART_SUFFIX = ".medallion-part"
_NOT_FOUND = {"NoSuchKey", "NoSuchBucket", "NotFound", "404"}
OnPage = Callable[[], object]
OnChunk = Callable[[int], object]
Chunks = Generator[bytes, None, None]


def no_progress(*_: object) -> None:
    """The default ``on_page``/``on_chunk``: do nothing."""


@dataclass(frozen=True)
class S3Object:
    bucket: str
    key: str
    etag: str  # without quotes; the content MD5 for single-part uploads
    size: int

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"


class ObjectStore(Protocol):
    """What the runtime needs from S3. ``on_page``/``on_chunk`` run before each list page request
    and after each downloaded chunk (its size), which is where
    ``throttle.ThrottledS3`` takes tokens."""

    def list(
        self, bucket: str, prefix: str = "", *, on_page: OnPage = no_progress
    ) -> list[S3Object]: ...
    def download(
        self, bucket: str, key: str, destination: Path, *, on_chunk: OnChunk = no_progress
    ) -> S3Object: ...
    def read(self, bucket: str, key: str, *, on_chunk: OnChunk = no_progress) -> bytes: ...
    def put(self, bucket: str, key: str, data: bytes) -> S3Object: ...
    def ensure_bucket(self, bucket: str) -> None: ...
    def spark_path(self, bucket: str, key: str, size: int = 0) -> str:
        """Where Spark reads the object (a Hadoop path, glob characters escaped); ``size``
        is what a throttled store charges for the read."""
        ...


_UNSAFE: tuple[tuple[Callable[[str], bool], str], ...] = (
    (lambda k: not k, "it is empty"),
    (lambda k: len(k.encode()) > 1024, "it is longer than S3's limit of 1024 bytes"),
    (lambda k: any(ord(c) < 32 or ord(c) == 127 for c in k), "it has a NUL or control character"),
    (lambda k: "\\" in k, "it has a backslash, which some tools read as a path separator"),
    (lambda k: k.startswith("/"), "it is an absolute path"),
    (lambda k: ".." in k.split("/"), "it has a '..' segment, which climbs out of the folder"),
    (lambda k: bool({".", ""} & set(k.split("/"))), "it has a '.' or empty segment (//, /$)"),
)


def check_key(key: str) -> str:
    """Return ``key`` if it maps to a relative path below a folder; else ValueError saying why."""
    for unsafe, reason in _UNSAFE:
        if unsafe(key):
            raise ValueError(f"unsafe S3 key {key!r}: {reason}")
    return key


_GLOB = re.compile(r"([\\*?\[\]{}])")


def hadoop_literal(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped, so Spark reads that one file.

    >>> hadoop_literal("s3a://raw/orders/a[1].csv")
    's3a://raw/orders/a\\\\[1\\\\].csv'
    """
    return _GLOB.sub(r"\\\1", path)


def key_path(root: Path, key: str) -> Path:
    """The local path of ``key`` below ``root``; ValueError if the key is unsafe."""
    path = root / check_key(key)
    # A symlink inside root must not lead a read or write outside it.
    if not path.resolve().is_relative_to(root.resolve()):
        raise ValueError(f"unsafe S3 key {key!r}: it resolves outside {root} through a symlink")
    return path


def _counted(chunks: Iterable[bytes], on_chunk: OnChunk) -> Iterator[bytes]:
    for chunk in chunks:
        yield chunk
        on_chunk(len(chunk))


def _write_atomically(destination: Path, chunks: Iterable[bytes]) -> str:
    """Stream ``chunks`` to a temp file beside ``destination``, then rename; return the MD5."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(
        dir=destination.parent, prefix=f".{destination.name}.", suffix=_PART_SUFFIX
    )
    digest = hashlib.md5(usedforsecurity=False)
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
                digest.update(chunk)
        os.replace(temp, destination)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    return digest.hexdigest()


class _StreamingStore:
    """``download`` and ``read`` on one primitive, ``_open``: the object and a chunk iterator.

    Truncated S3 streams raise in botocore (it checks Content-Length), so the rename never runs.
    """

    def _open(self, bucket: str, key: str) -> tuple[S3Object, Chunks]:
        raise NotImplementedError

    def download(
        self, bucket: str, key: str, destination: Path, *, on_chunk: OnChunk = no_progress
    ) -> S3Object:
        obj, chunks = self._open(bucket, check_key(key))
        with contextlib.closing(chunks):
            _write_atomically(Path(destination), _counted(chunks, on_chunk))
        return obj

    def read(self, bucket: str, key: str, *, on_chunk: OnChunk = no_progress) -> bytes:
        _, chunks = self._open(bucket, check_key(key))
        with contextlib.closing(chunks):
            return b"".join(_counted(chunks, on_chunk))


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
        if code in _NOT_FOUND:
            raise FileNotFoundError(f"{uri} does not exist ({code})") from error
        raise
    except BotoConnectionError as error:
        where = mask_credentials(endpoint) if endpoint else "AWS S3"
        raise S3Unreachable(
            f"cannot reach the S3 endpoint {where} (MEDALLION_S3_ENDPOINT) for {uri}: "
            f"{type(error).__name__}. Check that it is up and that MEDALLION_S3_ENDPOINT is its "
            "URL (unset it to read the local folder instead)"
        ) from error


class Boto3ObjectStore(_StreamingStore):
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
        max_attempts: int = 3,
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


class LocalFolderObjectStore(_StreamingStore):
    """A local folder standing in for S3: bucket = ``root/<bucket>``, key = relative path.

    ETags are the content MD5 (S3's single-part ETag), cached by (path, mtime, size) so listing
    a large folder does not re-hash unchanged files. Unlike S3, a key cannot be both an object
    and a "folder" of other keys (``a`` and ``a/b``).
    """

    def __init__(self, root: Path, *, page_size: int = PAGE_SIZE, chunk_size: int = CHUNK_SIZE):
        self.root = Path(root)
        self.page_size, self.chunk_size = page_size, chunk_size
        self._etags: dict[Path, tuple[int, int, str]] = {}
        self._lock = threading.Lock()

    def list(
        self, bucket: str, prefix: str = "", *, on_page: OnPage = no_progress
    ) -> list[S3Object]:
        """Every object under ``prefix`` (a string prefix, as in S3), sorted by key."""
        on_page()
        base = self._bucket(bucket)
        folder = prefix.rpartition("/")[0]
        start = key_path(base, folder) if folder else base
        objects = []
        for directory, _, files in os.walk(start):
            for name in files:
                path = Path(directory, name)
                key = path.relative_to(base).as_posix()
                if key.startswith(prefix) and not name.endswith(_PART_SUFFIX):
                    objects.append(self._object(bucket, key, path))
        objects.sort(key=lambda o: o.key)
        # Count the pages S3 would have needed, so throttled listing costs the same here.
        for _ in range(1, -(-len(objects) // self.page_size)):
            on_page()
        return objects

    def _open(self, bucket: str, key: str) -> tuple[S3Object, Chunks]:
        path = key_path(self._bucket(bucket), key)
        if not path.is_file():
            raise FileNotFoundError(f"s3://{bucket}/{key} does not exist (NoSuchKey)")
        return self._object(bucket, key, path), _file_chunks(path, self.chunk_size)

    def spark_path(self, bucket: str, key: str, size: int = 0) -> str:
        path = key_path(self._bucket(bucket), key)
        return hadoop_literal(f"file:{path.absolute()}")

    def put(self, bucket: str, key: str, data: bytes) -> S3Object:
        path = key_path(self._bucket(bucket), key)
        etag = _write_atomically(path, [data])
        stat = path.stat()
        with self._lock:
            self._etags[path] = (stat.st_mtime_ns, stat.st_size, etag)
        return S3Object(bucket, key, etag, len(data))

    def ensure_bucket(self, bucket: str) -> None:
        (self.root / check_bucket(bucket)).mkdir(parents=True, exist_ok=True)

    def _bucket(self, bucket: str) -> Path:
        path = self.root / check_bucket(bucket)
        if not path.is_dir():
            raise FileNotFoundError(f"s3://{bucket} does not exist (NoSuchBucket) in {self.root}")
        return path

    def _object(self, bucket: str, key: str, path: Path) -> S3Object:
        stat = path.stat()
        with self._lock:
            cached = self._etags.get(path)
        if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
            return S3Object(bucket, key, cached[2], stat.st_size)
        etag = _md5_file(path, self.chunk_size)
        with self._lock:
            self._etags[path] = (stat.st_mtime_ns, stat.st_size, etag)
        return S3Object(bucket, key, etag, stat.st_size)

    def __repr__(self) -> str:
        return f"LocalFolderObjectStore({str(self.root)!r})"


def _file_chunks(path: Path, chunk_size: int) -> Chunks:
    with path.open("rb") as source:
        while chunk := source.read(chunk_size):
            yield chunk


def _md5_file(path: Path, chunk_size: int) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    for chunk in _file_chunks(path, chunk_size):
        digest.update(chunk)
    return digest.hexdigest()


def object_store_of(settings: MedallionSettings) -> Boto3ObjectStore | LocalFolderObjectStore:
    """S3 when ``MEDALLION_S3_ENDPOINT`` is set or ``MEDALLION_S3=aws``; else the local folder
    standing in for it (``MEDALLION_S3_LOCAL_ROOT``, else ``$MEDALLION_HOME/s3``)."""
    if settings.uses_s3_api:
        return Boto3ObjectStore(settings.s3_endpoint, region=settings.aws_region)
    return LocalFolderObjectStore(settings.s3_root)
