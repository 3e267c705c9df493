"""A real Spark standalone cluster for tests: one master and one worker on 127.0.0.1, started
from the pyspark package's own ``bin/spark-class`` (``org.apache.spark.deploy.master.Master`` and
``org.apache.spark.deploy.worker.Worker``) and stopped by killing their process groups.

Use it from a fixture::

    @pytest.fixture(scope="module")
    def spark_cluster(tmp_path_factory):
        with running_spark_cluster(tmp_path_factory.mktemp("spark_cluster")) as cluster:
            yield cluster  # cluster.master_url == "spark://127.0.0.1:<port>"

Logs, the worker's work dir (one ``app-*`` folder per application it ran executors for) and
the daemons' scratch space live under the given folder, so concurrent test runs never share a
cluster. The worker's executors run this interpreter (``PYSPARK_PYTHON``), which has pyspark and
the project installed. Needs Java 17+ (``$JAVA_HOME/bin/java`` or ``java`` on PATH).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.spark_connect_server import _free_port, find_java, spark_daemon_env, spark_home

START_TIMEOUT = 120.0  # seconds; master and worker are usually up in 5-15 s
WORKER_CORES = 1
WORKER_MEMORY = "1g"


@dataclass(frozen=True)
class SparkCluster:
    master_port: int
    master_ui_port: int
    work_dir: Path  # the worker's work dir: one app-* folder per application it served
    logs: Path
    started_in: float  # seconds from launch until the worker had registered

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def state(self) -> dict[str, Any]:
        """The master's own JSON view (``/json/``): workers, active and completed apps."""
        url = f"http://127.0.0.1:{self.master_ui_port}/json/"
        with urllib.request.urlopen(url, timeout=10) as response:
            state: dict[str, Any] = json.loads(response.read())
        return state


def _env(base: Path) -> dict[str, str]:
    env = spark_daemon_env(base)
    env["SPARK_LOCAL_DIRS"] = str(base / "scratch")
    return env


def _daemon(
    base: Path, env: dict[str, str], name: str, args: list[str], hide: Path | None = None
) -> subprocess.Popen[bytes]:
    command = ["bash", str(spark_home() / "bin" / "spark-class"), *args]
    if hide is not None:
        # A mount namespace of its own with an empty tmpfs over ``hide``: the daemon (and the
        # executors it starts) cannot see what the driver keeps there.
        script = 'mount -t tmpfs medallion-hidden "$0" && exec "$@"'
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
        command += [str(hide), "bash", str(spark_home() / "bin" / "spark-class"), *args]
    with (base / "logs" / f"{name}.log").open("wb") as output:
        # A process group of its own, so teardown kills the JVM and its launcher together.
        return subprocess.Popen(
            command,
            cwd=base,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _tail(base: Path, lines: int = 30) -> str:
    return "\n".join(
        f"--- {p.name}\n" + "\n".join(p.read_text(errors="replace").splitlines()[-lines:])
        for p in sorted((base / "logs").glob("*.log"))
    )


def _wait_for_worker(
    cluster: SparkCluster, base: Path, daemons: list[subprocess.Popen[bytes]], count: int = 1
) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        dead = [d for d in daemons if d.poll() is not None]
        if dead:
            raise RuntimeError(f"Spark standalone daemon exited early:\n{_tail(base)}")
        with contextlib.suppress(OSError, ValueError):
            alive = [w for w in cluster.state().get("workers", []) if w.get("state") == "ALIVE"]
            if len(alive) >= count:
                return
        time.sleep(0.5)
    raise TimeoutError(
        f"Spark standalone worker not registered after {START_TIMEOUT:.0f} s:\n{_tail(base)}"
    )


def _stop(daemon: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(daemon.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        daemon.wait(timeout=20)
    # Whatever is left of the group (executors the worker started are its children).
    with contextlib.suppress(ProcessLookupError):
        os.killpg(daemon.pid, signal.SIGKILL)
    daemon.wait(timeout=30)


@contextmanager
def running_spark_cluster(
    base: Path, workers: int = 1, hide: Path | None = None
) -> Iterator[SparkCluster]:
    """Start a standalone master and ``workers`` workers (``WORKER_CORES`` cores,
    ``WORKER_MEMORY`` each) on 127.0.0.1 with logs and work dirs under ``base``; stop them all on
    exit, even on failure. ``hide``: a folder the workers see empty (each in a mount namespace
    with a tmpfs over it), as on hosts that share nothing with the driver but the network."""
    if find_java() is None:
        raise FileNotFoundError("Java not found ($JAVA_HOME/bin/java or java on PATH)")
    for folder in ("logs", "work", "scratch"):
        (base / folder).mkdir(parents=True, exist_ok=True)
    env = _env(base)
    port, ui_port = _free_port(), _free_port()
    started = time.monotonic()
    daemons: list[subprocess.Popen[bytes]] = []
    try:
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        master += ["--port", str(port), "--webui-port", str(ui_port)]
        daemons.append(_daemon(base, env, "master", master))
        for number in range(workers):
            worker = ["org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}"]
            worker += ["--host", "127.0.0.1", "--webui-port", str(_free_port())]
            worker += ["--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY]
            worker += ["--work-dir", str(base / "work")]
            name = "worker" if number == 0 else f"worker-{number + 1}"
            daemons.append(_daemon(base, env, name, worker, hide))
        cluster = SparkCluster(port, ui_port, base / "work", base / "logs", 0.0)
        _wait_for_worker(cluster, base, daemons, workers)
        yield SparkCluster(
            port, ui_port, base / "work", base / "logs", round(time.monotonic() - started, 1)
        )
    finally:
        for daemon in reversed(daemons):
            _stop(daemon)
