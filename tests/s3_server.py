"""Pytest fixtures for a real S3 API: moto's server on 127.0.0.1, spoken to over HTTP by boto3.

Register with ``pytest_plugins = ["tests.s3_server"]`` in the root conftest. The server is
started once per session and holds every test's buckets, so tests use their own bucket names.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

REGION = "us-east-1"
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@dataclass(frozen=True)
class S3Server:
    endpoint_url: str

    def client(self) -> Any:
        """A boto3 S3 client for this server with test credentials passed explicitly."""
        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint_url, region_name=REGION, **CREDENTIALS
        )


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port for the whole session; sets no env vars."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield S3Server(f"http://{host}:{port}")
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The env vars that point the project at the moto server, also set in os.environ for the
    test so boto3's credential chain finds them."""
    env = {
        "MEDALLION_S3_ENDPOINT": s3_server.endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def own_s3(tmp_path: Path) -> Iterator[S3Server]:
    """A moto server in a process of its own. moto keeps its buckets per process, so a second
    ThreadedMotoServer in this pytest process would share the e2e pipeline's buckets (the demo's
    bucket names are the same) and this run would read that pipeline's later batches."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = (tmp_path / "moto.log").open("w")
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "moto.log").read_text()
                assert time.monotonic() < deadline, "moto_server did not start in 30 s"
                time.sleep(0.2)
        yield S3Server(f"http://127.0.0.1:{port}")
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()
