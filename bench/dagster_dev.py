"""A real ``dagster dev`` (webserver, daemon, one code server) for a benchmark, spoken to over
GraphQL, its whole process group stopped at the end::

    with dagster_dev(project / "workspace.yaml", dagster_home, env) as dev:
        run_id = dev.launch("core_daily", {"pipeline": "core_daily"})

Run workers (and their Spark JVMs) are children of the daemon, in the same process group, so
stopping the group leaves nothing behind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from gql import Client, gql
from gql.transport.exceptions import TransportError
from gql.transport.requests import RequestsHTTPTransport

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
_SCHEDULES = """
query Schedules($selector: RepositorySelector!) { schedulesOrError(repositorySelector: $selector) {
    ... on Schedules { results { name scheduleState { id selectorId status } } } } }
"""
_STOP_SCHEDULE = """
mutation Stop($origin: String, $selector: String) {
  stopRunningSchedule(scheduleOriginId: $origin, scheduleSelectorId: $selector) { __typename
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
        """The ``data`` of one GraphQL request (gql, the client dagster-graphql's is built
        on); raises with the server's errors."""
        transport = RequestsHTTPTransport(url=f"{self.url}/graphql", timeout=60)
        with Client(transport=transport, fetch_schema_from_transport=False) as session:
            return dict(session.execute(gql(query), variable_values=dict(variables or {})))

    def repository(self) -> dict[str, str]:
        """The selector of the one repository of the one code location."""
        (repository,) = self.graphql(_REPOSITORIES)["repositoriesOrError"]["nodes"]
        return {
            "repositoryLocationName": repository["location"]["name"],
            "repositoryName": repository["name"],
        }

    def launch(self, job: str, tags: Mapping[str, str], tables: Sequence[str] = ()) -> str:
        """``launchRun`` of ``job`` (of only ``tables`` when given) with ``tags``; its run id."""
        selector: dict[str, Any] = {**self.repository(), "jobName": job}
        if tables:
            selector["assetSelection"] = [{"path": t.split(".", 1)} for t in tables]
        params = {
            "selector": selector,
            "runConfigData": {},
            "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
        }
        launched = self.graphql(_LAUNCH, {"params": params})["launchRun"]
        if launched["__typename"] != "LaunchRunSuccess":
            raise RuntimeError(f"launchRun {job}: {launched}")
        return str(launched["run"]["runId"])

    def stop_schedules(self) -> list[str]:
        """Stop every running schedule (so no tick adds runs of its own); their names."""
        answer = self.graphql(_SCHEDULES, {"selector": self.repository()})
        stopped = []
        for schedule in answer["schedulesOrError"]["results"]:
            state = schedule["scheduleState"]
            if state["status"] != "RUNNING":
                continue
            variables = {"origin": state["id"], "selector": state["selectorId"]}
            done = self.graphql(_STOP_SCHEDULE, variables)["stopRunningSchedule"]
            if done["__typename"] == "PythonError":
                raise RuntimeError(f"stopping {schedule['name']}: {done['message']}")
            stopped.append(str(schedule["name"]))
        return stopped

    def loaded(self) -> bool:
        """Whether the code location is loaded (raises when it failed to load)."""
        try:
            answer = self.graphql(_LOCATIONS)
        except (OSError, requests.RequestException, TransportError):
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
