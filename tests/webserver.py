"""A real ``dagster-webserver`` for tests: started on a free loopback port with a private
DAGSTER_HOME, spoken to over HTTP (``/server_info``, ``/graphql``), killed with its whole process
group at the end::

    with running_webserver(REPO / "workspace.yaml", home, env) as server:
        server.graphql("{ assetNodes { assetKey { path } } }")

The webserver starts a code server (and, for launched runs, run workers with their Spark JVMs)
as children; they share the webserver's process group, so killing the group leaves nothing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medallion_assets.adapters.instance import INSTANCE_SETTINGS

START_TIMEOUT = 120.0  # seconds until /server_info answers and the code location is loaded

# The project instance's settings (run monitoring included); without the daemon, the default
# queued coordinator would leave launched runs QUEUED forever.
INSTANCE_YAML = (
    INSTANCE_SETTINGS
    + """\
run_coordinator:
  module: dagster._core.run_coordinator
  class: DefaultRunCoordinator
"""
)

LAUNCH = """
mutation Launch($params: ExecutionParams!) { launchRun(executionParams: $params) { __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message stack }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } } } }
"""

_LOCATIONS = """
{ workspaceOrError { __typename
    ... on Workspace { locationEntries { name loadStatus
        locationOrLoadError { __typename ... on PythonError { message } } } }
    ... on PythonError { message } } }
"""


class GraphQLError(RuntimeError):
    """The server answered a GraphQL request with errors."""


@dataclass(frozen=True)
class DagsterWebserver:
    url: str
    home: Path
    log: Path
    started_in: float  # seconds from launch until the code location was loaded

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """POST one GraphQL request; returns ``data`` or raises with the server's errors."""
        body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
        request = urllib.request.Request(
            f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.load(response)
        if answer.get("errors"):
            raise GraphQLError(json.dumps(answer["errors"], indent=1)[:4000])
        return dict(answer["data"])


def write_instance(home: Path) -> Path:
    """A DAGSTER_HOME with the project instance's settings and runs launched without the
    daemon."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(INSTANCE_YAML)
    return home


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(medallion_home: Path) -> dict[str, str]:
    """This process's environment without anything pointing the project or Spark elsewhere."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("MEDALLION_")
        and name not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")
    }
    env.update(
        MEDALLION_HOME=str(medallion_home),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
    )
    return env


@contextmanager
def running_webserver(
    workspace: Path,
    home: Path,
    env: Mapping[str, str],
    timeout: float = START_TIMEOUT,
    *,
    dev: bool = False,
) -> Iterator[DagsterWebserver]:
    """Start ``dagster-webserver -w workspace`` with DAGSTER_HOME=home; stop it on exit. With
    ``dev``, ``dagster dev`` instead: the webserver and the daemon (sensors, schedules) sharing
    one code server, as a local deployment runs."""
    port = free_port()
    log = home / ("dagster_dev.log" if dev else "webserver.log")
    binary = Path(sys.executable).parent / "dagster-webserver"
    command = [str(binary), "-h", "127.0.0.1", "-p", str(port), "-w", str(workspace)]
    if dev:
        command = [str(Path(sys.executable).parent / "dagster"), "dev", *command[1:]]
    started = time.monotonic()
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            cwd=workspace.parent,
            env={**env, "DAGSTER_HOME": str(home)},
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, killed as a whole below
        )
    try:
        server = DagsterWebserver(f"http://127.0.0.1:{port}", home, log, 0.0)
        _wait_until_loaded(server, process, started + timeout)
        yield DagsterWebserver(server.url, home, log, round(time.monotonic() - started, 1))
    finally:
        stop_process_group(process)


def _wait_until_loaded(
    server: DagsterWebserver, process: subprocess.Popen[bytes], deadline: float
) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"dagster-webserver exited with {process.returncode}:\n{_tail(server)}"
            )
        try:
            with urllib.request.urlopen(f"{server.url}/server_info", timeout=5):
                pass
            entries = server.graphql(_LOCATIONS)["workspaceOrError"]["locationEntries"]
        except (OSError, urllib.error.URLError, GraphQLError):
            time.sleep(0.5)
            continue
        failed = [e for e in entries if e["locationOrLoadError"]["__typename"] == "PythonError"]
        if failed:
            raise RuntimeError(f"code location failed to load: {failed}")
        if entries and all(e["loadStatus"] == "LOADED" for e in entries):
            return
        time.sleep(0.5)
    raise TimeoutError(f"dagster-webserver not ready at {server.url}:\n{_tail(server)}")


def stop_process_group(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left of it after ``grace`` seconds."""
    group = process.pid  # start_new_session: the group id is the leader's pid
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while _group_alive(process) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not _group_alive(process):
            return


def _group_alive(process: subprocess.Popen[bytes]) -> bool:
    process.poll()  # reap the leader, or its zombie keeps the group "alive"
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


def _tail(server: DagsterWebserver, lines: int = 40) -> str:
    if not server.log.exists():
        return ""
    return "\n".join(server.log.read_text(errors="replace").splitlines()[-lines:])
