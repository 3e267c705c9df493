"""Every way a running `medallion run` is stopped ends the same way: one line saying what
stopped it, the exit code of the signal (130 for Ctrl-C, 143 for SIGTERM, 1 for its Spark
driver's JVM killed or its control store lost; a closed terminal's SIGHUP takes SIGTERM's path
with exit 1, tests/runtime/test_stop.py), no traceback, no process of it left behind, none of
its Dagster runs left STARTED; and the next plain `medallion run` gives what a clean run gives.

The run is the demo's, as a user starts it (its own process group, as a shell gives it), with
raw data and lake as in the cluster test: raw on a moto S3 server, so the rows can be
compared with the independent computation (tests/e2e/reference.py); its control store is
PostgreSQL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import psycopg
import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.io.s3_store import Boto3ObjectStore
from medallion_assets.testing import read_table
from tests.conftest import copy_demo_project
from tests.e2e import reference

pytestmark = pytest.mark.slow

MEDALLION = str(Path(sys.executable).parent / "medallion")
STEP_LINE = re.compile(r"^\[\s*\d+/\d+\] \S+\s+built\b")


def run_env(project: Path, s3_endpoint: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEDALLION_")}
    env.pop("DAGSTER_HOME", None)
    env.update(
        MEDALLION_HOME=str(project / ".medallion"),
        MEDALLION_S3_ENDPOINT=s3_endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        MEDALLION_SPARK_SHUFFLE_PARTITIONS="2",
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    return env


def processes_of_group(group: int) -> list[str]:
    """The command lines of live processes in process group ``group``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            state, pgid = fields[0], int(fields[2])
            if pgid == group and state != "Z":
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, IndexError, ValueError):
            continue
    return found


def java_of_group(group: int) -> int:
    """The pid of the Spark driver's JVM in process group ``group``."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes().split(b"\0")[0]
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and command.endswith(b"/java"):
            return int(stat.parent.name)
    raise AssertionError(f"no JVM in process group {group}")


def stopped_run(project: Path, env: dict[str, str], signum: int, group: bool) -> tuple[int, str]:
    """Start `medallion run`, send ``signum`` (to its whole process group: Ctrl-C; SIGKILL: to
    its Spark driver's JVM) once a table was built, and return (exit code, everything it
    printed) once it exited and every process of its group is gone."""

    def send(process: subprocess.Popen[str]) -> None:
        if signum == signal.SIGKILL:
            os.kill(java_of_group(process.pid), signum)
        elif group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)

    return interrupted_run(project, env, send)


def interrupted_run(
    project: Path, env: dict[str, str], interrupt: Callable[[subprocess.Popen[str]], None]
) -> tuple[int, str]:
    """Start `medallion run`, ``interrupt`` it once a table was built, and return (exit code,
    everything it printed) once it exited and every process of its group is gone."""
    process = subprocess.Popen(
        [MEDALLION, "run", "--project", str(project)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    printed = []
    for line in process.stdout:
        printed.append(line)
        if STEP_LINE.match(line):
            break
    else:
        pytest.fail("the run ended before building a table:\n" + "".join(printed))
    interrupt(process)
    printed.append(process.stdout.read())
    code = process.wait(timeout=120)
    deadline = time.monotonic() + 30
    while processes_of_group(process.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_of_group(process.pid) == [], "left behind"
    return code, "".join(printed)


def test_each_signal_stops_the_run_in_one_line_and_a_plain_rerun_equals_a_clean_run(
    tmp_path, own_s3, monkeypatch, postgres_server
):
    root = copy_demo_project(tmp_path / "theworldshop")
    env = run_env(root, own_s3.endpoint_url)
    database = f"stopping_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    control_url = postgres_server.dsn.rsplit("/", 1)[0] + f"/{database}"
    env["MEDALLION_CONTROL_URL"] = control_url  # a store the run can lose
    for name, value in env.items():
        if name.startswith(("AWS_", "MEDALLION_")):
            monkeypatch.setenv(name, value)  # boto3 writes the raw data, read_table reads gold
    catalog = load_catalog(root)
    clean = DemoSettings(rows=300, days=1, seed=11, vendor_uk_rate=0)
    write_files(generate(catalog, clean), Boto3ObjectStore(own_s3.endpoint_url))

    # SIGHUP takes SIGTERM's path (one handler for both, its own exit code: tests/runtime/
    # test_stop.py sends it to a real process).
    for signum, group, code, said in (
        (signal.SIGINT, True, 130, r"stopped by Ctrl-C \(SIGINT\)"),
        (signal.SIGTERM, False, 143, "stopped by SIGTERM"),
        (signal.SIGKILL, False, 1, r"the Spark driver \(JVM, pid \d+\) was killed \(SIGKILL\)"),
    ):
        exit_code, printed = stopped_run(root, env, signum, group)
        assert exit_code == code, printed[-3000:]
        assert "Traceback" not in printed and "Exception in thread" not in printed, printed
        last = printed.strip().splitlines()[-1]
        assert re.match(f"error: {said}: no table was published half-way", last), printed[-3000:]

    # The control store lost mid-run (PostgreSQL stopped as a crash would, back once the run
    # ended): the run stops at the first step that needs it, in one line naming it.
    try:
        exit_code, printed = interrupted_run(root, env, lambda _: postgres_server.stop())
    finally:
        postgres_server.start()
    assert exit_code == 1, printed[-3000:]
    assert "Traceback" not in printed, printed
    last = printed.strip().splitlines()[-1]
    # Which of the two a run meets first is a race: a step mid-query when the server went loses
    # its connection, a step opening one after cannot connect. Either names the store, once.
    assert re.match(
        r"error: stopped: (cannot connect to|lost the connection to) the control store "
        + re.escape(f"{control_url} (MEDALLION_CONTROL_URL)"),
        last,
    ), printed[-3000:]
    assert last.endswith("run `medallion run` again to finish"), last

    instance = dg.DagsterInstance.from_config(str(root / ".medallion" / "dagster"))
    statuses = {run.status for run in instance.get_runs()}
    assert statuses and dg.DagsterRunStatus.STARTED not in statuses, statuses
    assert dg.DagsterRunStatus.CANCELED in statuses, statuses

    done = subprocess.run(
        [MEDALLION, "run", "--project", str(root)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:]
    expected, _malformed = reference.compute(catalog, own_s3.client())
    for table in sorted(n for n in catalog.datasets if n.startswith("gold.")):
        want = reference.normalise(expected.execute(f"SELECT * FROM {table}").fetchall())
        frame = read_table(table, project=root)
        assert reference.normalise([tuple(r) for r in frame.itertuples(index=False)]) == want
