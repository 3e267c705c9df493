"""A real Spark Connect server for tests, started from the pyspark package's own
``sbin/spark-daemon.sh submit`` of the Connect server class (what ``start-connect-server.sh``
runs) on a free loopback port and stopped with ``spark-daemon.sh stop`` (its process group is
killed as a fallback).

Use it from a fixture::

    @pytest.fixture(scope="module")
    def connect_server(tmp_path_factory):
        with running_spark_connect_server(tmp_path_factory.mktemp("spark_connect")) as server:
            yield server  # server.url == "sc://127.0.0.1:<port>"

The server's pid file and logs live in a temp dir, so concurrent test runs never stop each
other's server. It needs Java 17+ (``$JAVA_HOME/bin/java`` or ``java`` on PATH).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from medallion_assets.lake.catalog import LakeCatalog, S3Endpoint

START_TIMEOUT = 120.0  # seconds; the server usually starts in 10-20 s
_STARTED = re.compile(r"Spark Connect server started at: [^\s:]+:(\d+)")


@dataclass(frozen=True)
class SparkConnectServer:
    port: int
    pid: int  # the server's JVM
    log: Path
    started_in: float  # seconds from launch until it accepted connections
    lake: Path  # the embedded lake (catalog inside) its catalog ``lake`` is

    def lake_catalog(self) -> LakeCatalog:
        return LakeCatalog.parse(f"sqlite:///{self.lake / 'catalog.db'}", str(self.lake))

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def find_java() -> str | None:
    if os.environ.get("JAVA_HOME"):
        java = Path(os.environ["JAVA_HOME"]) / "bin" / "java"
        if java.is_file():
            return str(java)
    return shutil.which("java")


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def spark_daemon_env(base: Path) -> dict[str, str]:
    """The environment of a Spark daemon started from the pyspark package: this process's,
    without Spark Connect client variables, logs under ``base``, loopback only, and this
    interpreter (which has pyspark and the project) for Python workers."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")
    }
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOG_DIR=str(base / "logs"),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
    )
    return env


def _server_env(base: Path) -> dict[str, str]:
    env = spark_daemon_env(base)
    env.update(SPARK_PID_DIR=str(base / "pid"), SPARK_IDENT_STRING="medallion-test")
    return env


def _launch(
    base: Path, env: dict[str, str], port: int, s3: S3Endpoint | None = None
) -> subprocess.Popen[bytes]:
    # What sbin/start-connect-server.sh runs (pyspark 4.1's package does not ship that script),
    # with the lake's jars and its catalog on the server, as a production server has them.
    from medallion_assets.jvm.driver import QUICK_JIT
    from medallion_assets.jvm.jars import jar_folder
    from medallion_assets.settings import MedallionSettings

    script = spark_home() / "sbin" / "spark-daemon.sh"
    jars = jar_folder(MedallionSettings.from_env(os.environ).jars_folder).jars
    lake = LakeCatalog.parse(f"sqlite:///{base / 'lake' / 'catalog.db'}", str(base / "lake"), s3)
    (base / "lake").mkdir(parents=True, exist_ok=True)
    lake_conf = [x for k, v in lake.spark_conf().items() for x in ("--conf", f"{k}={v}")]
    command = [
        "bash", str(script), "submit", CONNECT_SERVER_CLASS, "1",
        "--name", "Spark Connect server", "--master", "local[2]",
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.session.timeZone=UTC",
        # C1 only, as medallion's own local driver on a small machine: C2 compiling on 2 cores
        # slowed the demo through this server by half.
        "--driver-java-options", QUICK_JIT,
        "--jars", ",".join(str(j) for j in jars), *lake_conf,
    ]  # fmt: skip
    with (base / "launcher.log").open("wb") as output:
        # The script daemonizes the JVM with nohup; it stays in this new process group.
        return subprocess.Popen(
            command,
            cwd=base,  # spark-warehouse/ and friends land here, not in the repo
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _server_log(base: Path) -> Path | None:
    logs = sorted((base / "logs").glob("*.out"))
    return logs[0] if logs else None


def _tail(base: Path, lines: int = 40) -> str:
    texts = [base / "launcher.log", _server_log(base)]
    return "\n".join(
        "\n".join(p.read_text(errors="replace").splitlines()[-lines:])
        for p in texts
        if p is not None and p.exists()
    )


def _pid(base: Path) -> int | None:
    files = list((base / "pid").glob("*.pid"))
    try:
        return int(files[0].read_text().strip()) if files else None
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    """Running, not a zombie (the JVM is re-parented once the launcher script exits)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_until_started(base: Path, launcher: subprocess.Popen[bytes], started: float) -> int:
    """The port the server reports it listens on (Spark moves to the next port if taken)."""
    deadline = started + START_TIMEOUT
    while time.monotonic() < deadline:
        log = _server_log(base)
        match = _STARTED.search(log.read_text(errors="replace")) if log else None
        if match:
            return int(match.group(1))
        pid = _pid(base)
        if launcher.poll() is not None and (pid is None or not _alive(pid)):
            raise RuntimeError(f"Spark Connect server did not start:\n{_tail(base)}")
        time.sleep(0.5)
    raise TimeoutError(f"Spark Connect server not up after {START_TIMEOUT:.0f} s:\n{_tail(base)}")


def _stop(base: Path, env: dict[str, str], launcher: subprocess.Popen[bytes]) -> None:
    pid = _pid(base)
    script = spark_home() / "sbin" / "spark-daemon.sh"
    subprocess.run(
        ["bash", str(script), "stop", CONNECT_SERVER_CLASS, "1"],
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    deadline = time.monotonic() + 30
    while pid is not None and _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    launcher.poll()
    # Fallback: whatever is left of the launcher's group, the JVM included.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(launcher.pid, signal.SIGKILL)
    launcher.wait(timeout=30)


@contextmanager
def running_spark_connect_server(
    base: Path, s3_endpoint: str | None = None
) -> Iterator[SparkConnectServer]:
    """Start a Spark Connect server (``local[2]`` inside) with its pid file and logs under
    ``base``; stop it on exit. ``s3_endpoint``: an S3 API the server's s3a reads, with the
    test credentials in the server's environment (its AWS chain)."""
    if find_java() is None:
        raise FileNotFoundError("Java not found ($JAVA_HOME/bin/java or java on PATH)")
    env = _server_env(base)
    s3 = None
    if s3_endpoint is not None:
        s3 = S3Endpoint(s3_endpoint, "us-east-1")
        env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing")
    started = time.monotonic()
    launcher = _launch(base, env, _free_port(), s3)
    try:
        port = _wait_until_started(base, launcher, started)
        pid = _pid(base)
        if pid is None:
            raise RuntimeError(f"Spark Connect server wrote no pid file:\n{_tail(base)}")
        log = _server_log(base) or base / "launcher.log"
        started_in = round(time.monotonic() - started, 1)
        yield SparkConnectServer(port, pid, log, started_in, base / "lake")
    finally:
        _stop(base, env, launcher)
