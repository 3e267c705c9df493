"""Object stores against a real S3 API (moto's server over HTTP) and the local folder stand-in.

Every behaviour test runs on both stores: the folder store must behave like S3 for what the
runtime does with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from medallion_assets.catalog.models import Throttle
from medallion_assets.io import object_store as s3_module
from medallion_assets.io.object_store import LocalFolderObjectStore, ObjectStore, key_path
from medallion_assets.io.s3_store import Boto3ObjectStore, object_store_of
from medallion_assets.settings import MedallionSettings
from medallion_assets.throttles.throttle import SystemThrottle, ThrottledS3

# Until tests/conftest.py registers the plugin (pytest_plugins = ["tests.s3_server"]).
from tests.s3_server import S3Server

MakeStore = Callable[..., ObjectStore]
UNSAFE_KEYS = {
    "../escape.json": "'..' segment",
    "landing/../../escape.json": "'..' segment",
    "/etc/passwd": "absolute path",
    "orders\\..\\escape.json": "backslash",
    "orders/a\x00.json": "NUL or control character",
    "orders/a\n.json": "NUL or control character",
    "orders//a.json": "empty segment",
    "./orders/a.json": "'.' or empty segment",
    "": "empty",
}


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.slow)])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    """Build a store of the parametrized kind; options such as page_size pass through."""
    if request.param == "local":
        return lambda **options: LocalFolderObjectStore(tmp_path / "s3", **options)
    env = request.getfixturevalue("s3_env")
    endpoint, region = env["MEDALLION_S3_ENDPOINT"], env["AWS_DEFAULT_REGION"]
    return lambda **options: Boto3ObjectStore(endpoint, region, **options)


@pytest.fixture
def store(make_store: MakeStore) -> ObjectStore:
    return make_store()


@pytest.fixture
def bucket(store: ObjectStore) -> str:
    name = f"test-{uuid.uuid4().hex[:12]}"  # the moto server lives for the whole session
    store.ensure_bucket(name)
    return name


def test_list_returns_every_object_sorted_by_key_with_content_md5_etags(store, bucket):
    contents = {"orders/b.json": b'{"id": 2}\n', "orders/a.json": b'{"id": 1}\n', "x.csv": b""}
    put = {key: store.put(bucket, key, data) for key, data in contents.items()}
    listed = store.list(bucket)
    assert [o.key for o in listed] == ["orders/a.json", "orders/b.json", "x.csv"]
    assert {o.key: (o.etag, o.size) for o in listed} == {
        key: (md5(data), len(data)) for key, data in contents.items()
    }
    assert sorted(put.values(), key=lambda o: o.key) == listed


def test_prefix_is_a_string_prefix_as_in_s3_not_a_folder(store, bucket):
    for key in ("orders/dt=2024-01-01/a.json", "orders/dt=2024-01-02/b.json", "orders_v2/c.json"):
        store.put(bucket, key, b"{}")

    def keys(prefix: str) -> list[str]:
        return [o.key for o in store.list(bucket, prefix)]

    assert keys("orders/dt=2024-01-0") == [
        "orders/dt=2024-01-01/a.json",
        "orders/dt=2024-01-02/b.json",
    ]
    assert keys("orders/dt=2024-01-02/") == ["orders/dt=2024-01-02/b.json"]
    assert len(keys("orders")) == 3
    assert keys("customers/") == []


def test_list_reads_every_page(make_store, bucket):
    store = make_store(page_size=10)
    for i in range(25):
        store.put(bucket, f"events/{i:04d}.jsonl", b"{}\n")
    pages: list[int] = []
    listed = store.list(bucket, "events/", on_page=lambda: pages.append(1))
    assert [o.key for o in listed] == [f"events/{i:04d}.jsonl" for i in range(25)]
    assert len(pages) == 3


def test_read_and_download_return_the_content_and_its_etag(store, bucket, tmp_path):
    data = os.urandom(300_000)
    store.put(bucket, "raw/blob.bin", data)
    assert store.read(bucket, "raw/blob.bin") == data
    destination = tmp_path / "landing" / "nested" / "blob.bin"
    obj = store.download(bucket, "raw/blob.bin", destination)
    assert destination.read_bytes() == data
    assert (obj.key, obj.etag, obj.size) == ("raw/blob.bin", md5(data), len(data))
    assert os.listdir(destination.parent) == ["blob.bin"]  # no temporary file left behind


def test_download_failing_mid_stream_leaves_nothing_at_the_destination(
    make_store, bucket, tmp_path
):
    store = make_store(chunk_size=1024)
    store.put(bucket, "raw/big.bin", os.urandom(10 * 1024))
    destination = tmp_path / "landing" / "big.bin"
    chunks: list[int] = []

    def cut_after_two_chunks(size: int) -> None:
        chunks.append(size)
        if len(chunks) == 2:
            raise ConnectionResetError("connection lost mid-download")

    with pytest.raises(ConnectionResetError):
        store.download(bucket, "raw/big.bin", destination, on_chunk=cut_after_two_chunks)
    assert not destination.exists()
    assert os.listdir(destination.parent) == []


def test_download_failing_mid_stream_keeps_the_previous_file(make_store, bucket, tmp_path):
    store = make_store(chunk_size=1024)
    store.put(bucket, "raw/big.bin", os.urandom(10 * 1024))
    destination = tmp_path / "big.bin"
    destination.write_bytes(b"previous version")

    def fail(size: int) -> None:
        raise TimeoutError("read timed out")

    with pytest.raises(TimeoutError):
        store.download(bucket, "raw/big.bin", destination, on_chunk=fail)
    assert destination.read_bytes() == b"previous version"


def test_missing_key_or_bucket_is_file_not_found(store, bucket, tmp_path):
    with pytest.raises(FileNotFoundError, match=f"s3://{bucket}/orders/missing.json"):
        store.read(bucket, "orders/missing.json")
    with pytest.raises(FileNotFoundError):
        store.download(bucket, "orders/missing.json", tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(FileNotFoundError, match="no-such-bucket-here"):
        store.list("no-such-bucket-here")


@pytest.mark.parametrize("key", UNSAFE_KEYS)
def test_unsafe_keys_are_rejected_naming_the_key_and_why(store, bucket, tmp_path, key):
    message = f"unsafe S3 key {key!r}: .*{UNSAFE_KEYS[key]}"
    destination = tmp_path / "landing" / "a.json"
    with pytest.raises(ValueError, match=message.replace("\\", "\\\\")):
        store.put(bucket, key, b"pwned")
    with pytest.raises(ValueError, match="unsafe S3 key"):
        store.read(bucket, key)
    with pytest.raises(ValueError, match="unsafe S3 key"):
        store.download(bucket, key, destination)
    with pytest.raises(ValueError, match="unsafe S3 key"):
        key_path(tmp_path / "landing", key)
    assert not list(tmp_path.rglob("escape.json"))


def test_key_path_maps_safe_keys_below_the_root(tmp_path):
    assert key_path(tmp_path, "orders/dt=2024-01-01/part 1.json") == (
        tmp_path / "orders" / "dt=2024-01-01" / "part 1.json"
    )


def test_key_path_refuses_a_symlink_that_leads_outside_the_root(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path / "outside")
    with pytest.raises(ValueError, match="resolves outside"):
        key_path(tmp_path / "root", "link/escape.json")


def test_list_sees_objects_written_by_another_s3_client(s3_server: S3Server, s3_env):
    store = object_store_of(MedallionSettings.from_env(s3_env, Path("unused")))
    name = f"test-{uuid.uuid4().hex[:12]}"
    client = s3_server.client()
    client.create_bucket(Bucket=name)
    client.put_object(Bucket=name, Key="vendor/feed.csv", Body=b"id\n1\n")
    client.put_object(Bucket=name, Key="vendor/", Body=b"")  # a console "folder" marker
    head = client.head_object(Bucket=name, Key="vendor/feed.csv")
    (obj,) = store.list(name, "vendor/")
    assert (obj.key, obj.etag, obj.size) == ("vendor/feed.csv", head["ETag"].strip('"'), 5)


def test_errors_never_contain_credentials(s3_env, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "Secret-Value-4711")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIA-KEY-4711")
    store = object_store_of(MedallionSettings.from_env(s3_env, tmp_path))
    errors: list[BaseException] = []
    for call in (
        lambda: store.read("no-such-bucket-here", "a.json"),
        lambda: store.list("no-such-bucket-here"),
        lambda: store.put("no-such-bucket-here", "a/../b", b""),
    ):
        with pytest.raises((OSError, ValueError)) as caught:
            call()
        errors.append(caught.value)
    for text in [repr(store), *(f"{e!r} {e.__cause__!r}" for e in errors)]:
        assert "4711" not in text


def hashed_files(monkeypatch) -> list[Path]:
    """The files the local store hashes from now on, in order."""
    hashed: list[Path] = []
    real_md5_file = s3_module._md5_file

    def counting_md5_file(path: Path, chunk_size: int) -> str:
        hashed.append(path)
        return real_md5_file(path, chunk_size)

    monkeypatch.setattr(s3_module, "_md5_file", counting_md5_file)
    return hashed


def test_local_store_does_not_rehash_unchanged_files(tmp_path, monkeypatch):
    store = LocalFolderObjectStore(tmp_path)
    store.ensure_bucket("lake-raw")
    for i in range(3):
        (tmp_path / "lake-raw" / f"f{i}.json").write_bytes(b"{}" * i)
    hashed = hashed_files(monkeypatch)
    store.list("lake-raw")
    store.list("lake-raw")
    assert len(hashed) == 3
    changed = tmp_path / "lake-raw" / "f1.json"
    changed.write_bytes(b"changed content")
    listed = {o.key: o.etag for o in store.list("lake-raw")}
    assert hashed[3:] == [changed]
    assert listed["f1.json"] == md5(b"changed content")


def test_local_store_keeps_etags_for_the_next_process(tmp_path, monkeypatch):
    first = LocalFolderObjectStore(tmp_path)
    first.ensure_bucket("lake-raw")
    for i in range(3):
        (tmp_path / "lake-raw" / f"f{i}.json").write_bytes(b"{}" * (i + 1))
    (tmp_path / "lake-raw" / "gone.json").write_bytes(b"[]")
    first.list("lake-raw")
    (tmp_path / "lake-raw" / "gone.json").unlink()
    changed = tmp_path / "lake-raw" / "f1.json"
    changed.write_bytes(b"changed content")
    hashed = hashed_files(monkeypatch)
    listed = {o.key: o.etag for o in LocalFolderObjectStore(tmp_path).list("lake-raw")}
    assert hashed == [changed]  # only the file changed since the other process listed it
    assert listed == {
        "f0.json": md5(b"{}"),
        "f1.json": md5(b"changed content"),
        "f2.json": md5(b"{}" * 3),
    }
    recorded = json.loads((tmp_path / ".medallion-etags.json").read_text())
    assert sorted(recorded) == ["lake-raw/f0.json", "lake-raw/f1.json", "lake-raw/f2.json"]


def test_local_store_hashes_again_over_a_damaged_etag_file(tmp_path):
    (tmp_path / "lake-raw").mkdir()
    (tmp_path / "lake-raw" / "a.json").write_bytes(b"{}")
    (tmp_path / ".medallion-etags.json").write_text('{"lake-raw/a.json": [1, 2, "not')
    [listed] = LocalFolderObjectStore(tmp_path).list("lake-raw")
    assert listed.etag == md5(b"{}")


def test_local_store_hides_its_own_partial_writes(tmp_path):
    store = LocalFolderObjectStore(tmp_path)
    store.ensure_bucket("lake-raw")
    (tmp_path / "lake-raw" / ".a.json.x1.medallion-part").write_bytes(b"half")
    store.put("lake-raw", "a.json", b"{}")
    assert [o.key for o in store.list("lake-raw")] == ["a.json"]


def throttled(store: ObjectStore, **limits: Any) -> ThrottledS3:
    burst_seconds = limits.pop("burst_seconds", 1.0)
    return ThrottledS3(store, SystemThrottle("s3", Throttle(**limits), burst_seconds=burst_seconds))


def test_throttled_list_takes_one_request_token_per_page(make_store, bucket):
    store = make_store(page_size=10)
    for i in range(25):
        store.put(bucket, f"p/{i:02d}", b"")
    limited = throttled(store, requests_per_second=1000)
    assert len(limited.list(bucket, "p/")) == 25
    assert limited.throttle.usage().requests == 3


def test_throttled_requests_per_second_is_respected(store, bucket):
    store.put(bucket, "small.json", b"{}")
    limited = throttled(store, requests_per_second=50, burst_seconds=0.2)  # burst of 10
    started = time.monotonic()
    for _ in range(40):
        limited.read(bucket, "small.json")
    elapsed = time.monotonic() - started
    beyond_burst = (40 - 10) / elapsed
    print(f"\n{type(store).__name__}: 40 reads at 50/s: {elapsed:.3f} s, {beyond_burst:.1f}/s")
    assert elapsed >= 0.6 - 0.01
    assert beyond_burst <= 50 * 1.01
    assert limited.throttle.usage().requests == 40


def test_throttled_download_respects_bytes_per_second(make_store, bucket, tmp_path):
    store = make_store(chunk_size=64 * 1024)
    data = os.urandom(512 * 1024)
    store.put(bucket, "raw/feed.bin", data)
    limit = 512 * 1024
    limited = throttled(store, bytes_per_second=limit, burst_seconds=0.25)  # burst of 128 KiB
    started = time.monotonic()
    limited.download(bucket, "raw/feed.bin", tmp_path / "feed.bin")
    elapsed = time.monotonic() - started
    beyond_burst = (len(data) - limit * 0.25) / elapsed
    usage = limited.throttle.usage()
    print(
        f"\n{type(store).__name__}: 512 KiB at 512 KiB/s: {elapsed:.3f} s, "
        f"{beyond_burst / 1024:.0f} KiB/s beyond the burst, {usage.bytes_per_second / 1024:.0f} "
        "KiB/s overall"
    )
    assert (tmp_path / "feed.bin").read_bytes() == data
    assert usage.bytes == len(data)
    assert elapsed >= 0.75 - 0.01
    assert beyond_burst <= limit * 1.01


def test_throttled_put_takes_byte_tokens_per_chunk(store, bucket):
    clock = [0.0]
    throttle = SystemThrottle(
        "s3",
        Throttle(bytes_per_second=1024 * 1024),
        clock=lambda: clock[0],
        sleep=lambda seconds: clock.__setitem__(0, clock[0] + seconds),
    )
    limited = ThrottledS3(store, throttle)
    obj = limited.put(bucket, "out/3mib.bin", b"x" * (3 * 1024 * 1024))
    assert obj.size == 3 * 1024 * 1024
    usage = throttle.usage()
    assert (usage.requests, usage.bytes) == (1, 3 * 1024 * 1024)
    assert usage.waited_seconds == pytest.approx(2.0)  # 3 MiB at 1 MiB/s after a 1 MiB burst


def test_object_store_of_chooses_the_store_from_the_settings_only(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDALLION_S3_ENDPOINT", "http://127.0.0.1:1")  # must be ignored

    def store_of(env: dict[str, str]) -> object:
        return object_store_of(MedallionSettings.from_env(env, tmp_path))

    default = store_of({"MEDALLION_HOME": str(tmp_path / "home")})
    assert isinstance(default, LocalFolderObjectStore) and default.root == tmp_path / "home/s3"
    local = store_of({"MEDALLION_S3_LOCAL_ROOT": str(tmp_path / "x")})
    assert isinstance(local, LocalFolderObjectStore) and local.root == tmp_path / "x"
    env = {"MEDALLION_S3_ENDPOINT": "http://127.0.0.1:9", "AWS_DEFAULT_REGION": "eu-west-1"}
    remote = store_of(env)
    assert isinstance(remote, Boto3ObjectStore)
    assert (remote.endpoint_url, remote.region) == ("http://127.0.0.1:9", "eu-west-1")
    aws = store_of({"MEDALLION_S3": "aws"})
    assert isinstance(aws, Boto3ObjectStore) and aws.endpoint_url is None
    assert aws.region == "us-east-1"
