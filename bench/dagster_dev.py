"""A real ``dagster dev`` (webserver, daemon, one code server) for a benchmark, spoken to over
GraphQL, its whole process group stopped at the end::

    with dagster_dev(project / "workspace.yaml", dagster_home, env) as dev:
        run_id = dev.launch("core_daily", {"pipeline": "core_daily"})

Run workers (and their Spark JVMs) are children of the daemon, in the same process group, so
stopping the group leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

READY_TIMEOUT_S = 180.0

_LAUNCH = """
mutation Launch($params: ExecutionParams!) { launchRun(executionParams: $params) { __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on InvalidSubsetError { message }
    ... on RunConfigValidationInvalid { errors { message } } } }
"""
_REPOSITORIES = """
{ repositoriesOrError { __typename
    ... on RepositoryConnection { nodes { name location { name } } }
    ... on PythonError { message } } }
"""
_LOCATIONS = """
{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus
    locationOrLoadError { __typename ... on PythonError { message } } } } } }
"""


@dataclass(frozen=True)
class DagsterDev:
    url: str
    log: Path

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The ``data`` of one GraphQL request; raises with the server's errors."""
        body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
        request = urllib.request.Request(
            f"{self.url}/graphql", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.load(response)
        if answer.get("errors"):
            raise RuntimeError(f"GraphQL errors: {json.dumps(answer['errors'])[:2000]}")
        return dict(answer["data"])

    def launch(self, job: str, tags: Mapping[str, str]) -> str:
        """``launchRun`` of ``job`` (of the one code location) with ``tags``; its run id."""
        (repository,) = self.graphql(_REPOSITORIES)["repositoriesOrError"]["nodes"]
        params = {
            "selector": {
                "repositoryLocationName": repository["location"]["name"],
                "repositoryName": repository["name"],
                "jobName": job,
            },
            "runConfigData": {},
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        launched = self.graphql(_LAUNCH, {"params": params})["launchRun"]
        if launched["__typename"] != "LaunchRunSuccess":
            raise RuntimeError(f"launchRun {job}: {launched}")
        return str(launched["run"]["runId"])

    def loaded(self) -> bool:
        """Whether the code location is loaded (raises when it failed to load)."""
        try:
            answer = self.graphql(_LOCATIONS)
        except (OSError, RuntimeError):
            return False
        entries = answer.get("workspaceOrError", {}).get("locationEntries", [])
        for entry in entries:
            if entry["locationOrLoadError"]["__typename"] == "PythonError":
                raise RuntimeError(f"code location failed to load: {entry}")
        return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)


@contextmanager
def dagster_dev(
    workspace: Path, dagster_home: Path, env: Mapping[str, str]
) -> Iterator[DagsterDev]:
    """``dagster dev -w workspace`` with ``DAGSTER_HOME=dagster_home`` on a free loopback port,
    once its code location is loaded; stopped (the whole process group) on exit."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    log = dagster_home / "dagster_dev.log"
    command = [str(Path(sys.executable).parent / "dagster"), "dev", "-h", "127.0.0.1"]
    command += ["-p", str(port), "-w", str(workspace)]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command,
            cwd=workspace.parent,
            env={**env, "DAGSTER_HOME": str(dagster_home)},
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        dev = DagsterDev(f"http://127.0.0.1:{port}", log)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not dev.loaded():
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace").splitlines()[-30:]
                raise RuntimeError("dagster dev did not come up:\n" + "\n".join(tail))
            time.sleep(0.5)
        yield dev
    finally:
        _stop_group(process)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, SIGKILL what is left of it 20 s later."""
    for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            process.poll()
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
