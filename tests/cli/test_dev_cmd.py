"""``medallion dev``: the Dagster UI on any project, on the instance ``medallion run`` records
into; a folder that is not a project, or a project that does not load, is said in as many lines
as it has problems, before any Dagster process starts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
from pathlib import Path

import pytest
import yaml

from tests.cli.conftest import invoke
from tests.webserver import DagsterWebserver, GraphQLError, free_port, stop_process_group

IDLE_SECONDS = 25.0
START_TIMEOUT = 180.0  # seconds: dagster dev starts a webserver, a daemon and a code server


pytestmark = pytest.mark.usefixtures("embedded_defaults")
medallion = invoke


def test_a_folder_that_is_not_a_project_is_said_in_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("my notes\n")

    done = medallion("dev", "--project", str(tmp_path))

    assert done.exit_code == 2
    assert done.stderr == (
        f"error: {tmp_path} is not a medallion project (no metadata/ or sql/ folder); create "
        f"one with: medallion init {tmp_path}\n"
    )


def test_a_project_that_does_not_load_lists_its_problems_and_starts_no_dagster(tmp_path):
    root = tmp_path / "shop"
    assert medallion("init", str(root)).exit_code == 0
    (root / "sql/gold/broken.sql").write_text("SELECT country FROM silver.orders_missing\n")
    (root / "metadata/targets.yaml").write_text("targets:\n  - {table: gold.nowhere}\n")

    done = medallion("dev", "--project", str(root))

    assert done.exit_code == 2
    head, *problems = done.stderr.splitlines()
    assert head == f"error: the project at {root} does not load:"
    assert any("sql/gold/broken.sql" in p and "silver.orders_missing" in p for p in problems)
    assert any(p.startswith("  metadata/targets.yaml") for p in problems)
    assert done.stdout == ""  # nothing said of a UI
    assert not (root / ".medallion" / "dagster").exists()  # no instance was set up for one


def test_a_port_in_use_is_said_in_one_line_before_dagster_starts(tmp_path):
    root = tmp_path / "shop"
    assert medallion("init", str(root)).exit_code == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = medallion("dev", "--project", str(root), "--port", str(port))

    assert done.exit_code == 2
    assert done.stderr == (
        f"error: port {port} on 127.0.0.1 is in use (another Dagster UI?): add --port N\n"
    )
    assert not (root / ".medallion" / "dagster").exists()


@pytest.mark.slow
def test_dev_opens_the_ui_on_the_project_and_the_instance_medallion_run_uses(tmp_path):
    root = tmp_path / "shop"
    assert medallion("init", str(root)).exit_code == 0
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDALLION_")}
    env.pop("DAGSTER_HOME", None)
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    log, pid = tmp_path / "dev.log", tmp_path / "dev.pid"
    command = [str(Path(sys.executable).parent / "medallion"), "dev", "--project", str(root)]
    # As a script starts it: a background job of a shell without job control, whose SIGINT
    # is ignored (POSIX); `dagster dev` maps SIGTERM to SIGINT's handler.
    script = f'"$@" & echo $! > {pid}; wait'
    with log.open("wb") as output:
        process = subprocess.Popen(
            ["/bin/sh", "-c", script, "sh", *command, "--port", str(port)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # whatever SIGTERM leaves is killed with its group below
        )
    try:
        server = DagsterWebserver(f"http://127.0.0.1:{port}", root, log, 0.0)
        answer = wait_for_assets(server, process)
        # Idle, the console stays readable: the daemon's sensors tick every 5-60 s, and at
        # the default log level none of their ticks is a line (the bar: 5 lines a minute).
        before = len(log.read_text().splitlines())
        time.sleep(IDLE_SECONDS)
        idle = log.read_text().splitlines()[before:]
        # SIGTERM to `medallion dev` alone stops it, its webserver, daemon and code server.
        os.kill(int(pid.read_text()), signal.SIGTERM)
        deadline = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        stopped = process.poll() is not None
    finally:
        stop_process_group(process, grace=5.0)
    assert stopped, "medallion dev did not stop within 60 s of SIGTERM"
    assert answer["shouldShowNux"] is False  # no first-open pop-up

    keys = {"/".join(node["assetKey"]["path"]) for node in answer["assetNodes"]}
    assert keys == {
        "raw/orders",
        "bronze/orders",
        "silver/orders_clean",
        "gold/customer_orders",
        "gold/daily_revenue",
    }
    home = root / ".medallion" / "dagster"
    assert f"base_dir: {home}\n" in answer["instance"]["info"]
    assert yaml.safe_load((home / "dagster.yaml").read_text())["telemetry"] == {"enabled": False}
    said = log.read_text()
    url = f"http://127.0.0.1:{port}"
    assert said.startswith(f"Dagster UI of project shop at {url} (instance {home})")
    assert "dg dev" not in said  # Dagster's advice to use another command is not shown
    assert len(idle) <= 2, "\n".join(idle)  # 5 a minute would be ~2 in 25 s


def wait_for_assets(server: DagsterWebserver, process: subprocess.Popen[bytes]) -> dict:
    """The asset keys and the instance, once the UI's code location has loaded them."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert process.poll() is None, f"medallion dev exited:\n{server.log.read_text()[-4000:]}"
        try:
            answer = server.graphql(
                "{ assetNodes { assetKey { path } } instance { info } shouldShowNux }"
            )
        except (OSError, urllib.error.URLError, GraphQLError):
            answer = {}
        if answer.get("assetNodes"):
            return answer
        time.sleep(1.0)
    raise TimeoutError(f"no asset graph at {server.url}:\n{server.log.read_text()[-4000:]}")
