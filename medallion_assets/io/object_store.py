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
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from medallion_assets.catalog.base import check_bucket

if TYPE_CHECKING:
    pass

CHUNK_SIZE = 1024 * 1024
PAGE_SIZE = 1000  # the most keys S3 returns per ListObjectsV2 page
_PART_SUFFIX = ".medallion-part"
_ETAGS = ".medallion-etags.json"  # beside the buckets: a bucket name cannot start with "."
NOT_FOUND = {"NoSuchKey", "NoSuchBucket", "NotFound", "404"}
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


class StreamingStore:
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


class LocalFolderObjectStore(StreamingStore):
    """A local folder standing in for S3: bucket = ``root/<bucket>``, key = relative path.

    ETags are the content MD5 (S3's single-part ETag), cached by (path, mtime, size) so listing
    a large folder does not re-hash unchanged files. The cache is kept beside the buckets in
    ``.medallion-etags.json`` (a name no bucket can have), as S3 keeps an object's ETag with
    it, so a new process does not read every object again either; a folder it cannot write
    to is hashed in memory only. Unlike S3, a key cannot be both an object and a "folder" of
    other keys (``a`` and ``a/b``).
    """

    def __init__(self, root: Path, *, page_size: int = PAGE_SIZE, chunk_size: int = CHUNK_SIZE):
        self.root = Path(root)
        self.page_size, self.chunk_size = page_size, chunk_size
        self._etags: dict[Path, tuple[int, int, str]] = {}
        self._lock = threading.Lock()
        self._loaded = self._hashed = False

    def list(
        self, bucket: str, prefix: str = "", *, on_page: OnPage = no_progress
    ) -> list[S3Object]:
        """Every object under ``prefix`` (a string prefix, as in S3), sorted by key."""
        on_page()
        base = self._bucket(bucket)
        self._load_etags()
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
        self._save_etags()
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
            self._hashed = True
        return S3Object(bucket, key, etag, stat.st_size)

    def _load_etags(self) -> None:
        """The ETags an earlier process recorded (once per store; a missing or damaged file
        is an empty cache: the objects are hashed again)."""
        if self._loaded:
            return
        recorded = _read_etags(self.root / _ETAGS)
        with self._lock:
            for name, (mtime, size, etag) in recorded.items():
                self._etags.setdefault(self.root / name, (mtime, size, etag))
            self._loaded = True

    def _save_etags(self) -> None:
        """Record the ETags hashed since the last save, with those other processes recorded
        meanwhile, for files that still exist; written whole and renamed into place."""
        with self._lock:
            if not self._hashed:
                return
            self._hashed = False
            mine = {
                path.relative_to(self.root).as_posix(): list(entry)
                for path, entry in self._etags.items()
            }
        target = self.root / _ETAGS
        merged = {**_read_etags(target), **mine}
        kept = {k: v for k, v in merged.items() if (self.root / k).is_file()}
        try:
            _write_atomically(target, [json.dumps(kept, separators=(",", ":")).encode()])
        except OSError:  # a folder it may not write to: the cache stays in memory
            return

    def __repr__(self) -> str:
        return f"LocalFolderObjectStore({str(self.root)!r})"


def _read_etags(path: Path) -> dict[str, tuple[int, int, str]]:
    """``relative path -> (mtime_ns, size, etag)`` from ``path``; {} when missing or damaged."""
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    found = {}
    for name, entry in loaded.items():
        if isinstance(entry, list) and len(entry) == 3:
            mtime, size, etag = entry
            if isinstance(mtime, int) and isinstance(size, int) and isinstance(etag, str):
                found[str(name)] = (mtime, size, etag)
    return found


def _file_chunks(path: Path, chunk_size: int) -> Chunks:
    with path.open("rb") as source:
        while chunk := source.read(chunk_size):
            yield chunk


def _md5_file(path: Path, chunk_size: int) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    for chunk in _file_chunks(path, chunk_size):
        digest.update(chunk)
    return digest.hexdigest()
