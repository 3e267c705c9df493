"""A throwaway PostgreSQL server for tests: ``initdb`` into a temp dir, start on a free port on
127.0.0.1, stop and delete at the end of the session.

Use it as a plugin or import the fixture into a test module::

    from tests.postgres_server import postgres_server  # noqa: F401

The binaries are looked up in ``$MEDALLION_PG_BIN``, then the newest ``/usr/lib/postgresql/*/bin``,
then ``PATH``. initdb refuses to run as root, so as root the server runs as the ``postgres`` user.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

_SERVER_USER = "postgres"


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    socket_dir: Path
    data_dir: Path
    pg_ctl: tuple[str, ...] = ()  # how to run pg_ctl (as the server user)
    options: str = ""

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@{self.host}:{self.port}/postgres"

    def stop(self) -> None:
        """Stop the server as a crash would (immediate: no checkpoint, clients cut off)."""
        _run([*self.pg_ctl, "-D", str(self.data_dir), "-m", "immediate", "-w", "stop"], "stop")

    def start(self) -> None:
        """Start the server again, on its port."""
        log = self.data_dir.parent / "server.log"
        _run(
            [*self.pg_ctl, "-D", str(self.data_dir), "-l", str(log), "-o", self.options,
             "-w", "-t", "30", "start"],
            "pg_ctl start",
        )  # fmt: skip


def find_pg_bin() -> Path | None:
    """The directory holding initdb and pg_ctl, or None."""
    candidates = []
    if os.environ.get("MEDALLION_PG_BIN"):
        candidates.append(Path(os.environ["MEDALLION_PG_BIN"]))
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    candidates.extend(versions)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).parent)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
    return ["runuser", "-u", _SERVER_USER, "--"]


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed ({result.returncode}):\n{result.stdout}{result.stderr}")


def _start(pg_bin: Path, prefix: list[str], base: Path) -> PostgresServer:
    data_dir, socket_dir, log = base / "data", base / "socket", base / "server.log"
    _run(
        [
            *prefix, str(pg_bin / "initdb"), "-D", str(data_dir), "-U", "postgres",
            "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions",
        ],
        "initdb",
    )  # fmt: skip
    # Durability is worthless for a throwaway cluster; skipping fsync keeps each test fast.
    last_error: Exception | None = None
    for _ in range(3):  # another process may grab the free port between probe and bind
        port = _free_port()
        options = (
            f"-p {port} -k {socket_dir} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        try:
            _run(
                [*prefix, str(pg_bin / "pg_ctl"), "-D", str(data_dir), "-l", str(log),
                 "-o", options, "-w", "-t", "30", "start"],
                "pg_ctl start",
            )  # fmt: skip
            pg_ctl = (*prefix, str(pg_bin / "pg_ctl"))
            return PostgresServer("127.0.0.1", port, socket_dir, data_dir, pg_ctl, options)
        except RuntimeError as error:
            last_error = error
    log_text = log.read_text(errors="replace") if log.exists() else ""
    raise RuntimeError(f"PostgreSQL did not start: {last_error}\n{log_text}")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A running PostgreSQL server for the test session; ``.dsn`` connects as superuser."""
    pg_bin = find_pg_bin()
    if pg_bin is None:
        pytest.skip(
            "PostgreSQL binaries (initdb, pg_ctl) not found in $MEDALLION_PG_BIN, "
            "/usr/lib/postgresql/*/bin or PATH; install postgresql to run these tests"
        )
    prefix = _as_server_user()
    # Not under pytest's tmp dir: that is private to the test user, and the server user must
    # be able to reach its data and socket directories.
    base = Path(tempfile.mkdtemp(prefix="medallion-pg-"))
    (base / "socket").mkdir()
    if prefix:
        for path in (base, base / "socket"):
            shutil.chown(path, user=_SERVER_USER, group=_SERVER_USER)
    try:
        server = _start(pg_bin, prefix, base)
        try:
            yield server
        finally:
            subprocess.run(
                [*prefix, str(pg_bin / "pg_ctl"), "-D", str(server.data_dir),
                 "-m", "immediate", "-w", "stop"],
                capture_output=True, timeout=60, check=False,
            )  # fmt: skip
    finally:
        shutil.rmtree(base, ignore_errors=True)
