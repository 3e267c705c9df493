"""A damaged control store, an unreachable PostgreSQL or S3 endpoint, a project that does not
load: every command says so in one line naming the file or endpoint and the fix, and exits 2,
never with a traceback. The commands run as the user runs them, in their own process."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from medallion_assets.control.store import ControlStore
from tests.conftest import copy_demo_project

MEDALLION = Path(sys.executable).parent / "medallion"


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_demo_project(tmp_path / "theworldshop")


def medallion(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEDALLION_")}
    environ.update({"MEDALLION_HOME": str(project / ".medallion"), **env})
    return subprocess.run(
        [str(MEDALLION), *args, "--project", str(project)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )


def assert_one_clear_error(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()  # one line
    for needle in needles:
        assert needle in line
    return line


COMMANDS = [
    ("control", "status"),
    ("audit",),
    ("control", "disable", "dataset:gold.revenue_by_region", "--reason", "bad feed"),
]
# `medallion run` imports Dagster and builds the definitions first (seconds per process): the
# tests that run it are in the slow tier.
RUN = pytest.param(("run",), marks=pytest.mark.slow, id="run")


@pytest.mark.slow
@pytest.mark.parametrize("commands", [pytest.param(COMMANDS, id="control"), RUN])
def test_a_control_db_holding_garbage_is_one_clear_error_from_every_command(
    project: Path, commands
):
    store = project / ".medallion" / "control.db"
    store.parent.mkdir(parents=True)
    store.write_bytes(b"\x13garbage, not SQLite" * 200)
    for command in commands if commands is COMMANDS else [commands]:
        line = assert_one_clear_error(
            medallion(project, *command), str(store), f"mv {store} {store}.corrupt", ".recover"
        )
        assert "corrupt or not a SQLite database" in line
    assert store.read_bytes().startswith(b"\x13garbage")  # nothing overwrote it


@pytest.mark.slow
def test_a_truncated_control_db_is_one_clear_error(project: Path):
    path = project / ".medallion" / "control.db"
    ControlStore.open(f"sqlite:///{path}")
    with sqlite3.connect(path) as db:  # an audit log of some size, checkpointed into the file
        db.executemany(
            "INSERT INTO audit_log (at, kind, entity, run_id, message, details) "
            "VALUES ('2026-01-01T00:00:00Z', 'attempt', 'dataset:x', '', ?, '{}')",
            [(f"attempt {i} " + "x" * 80,) for i in range(3000)],
        )
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])  # a copy cut short, a disk that filled up
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    assert_one_clear_error(medallion(project, "audit"), str(path), "database disk image")


@pytest.mark.slow
def test_an_unreachable_postgresql_control_store_is_one_line_without_the_password(
    project: Path,
):
    url = f"postgresql://etl:S3cr%2Fet@127.0.0.1:{closed_port()}/control"
    for command in (("control", "status"), ("run",)):  # run: its run lock is the first use
        done = medallion(project, *command, MEDALLION_CONTROL_URL=url)
        line = assert_one_clear_error(
            done, "cannot connect to the control store", "MEDALLION_CONTROL_URL"
        )
        assert "S3cr" not in line and "127.0.0.1" in line


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variable", "said"),
    [
        ("MEDALLION_LAKE_CATALOG", "the lake's catalog jdbc:postgresql://127.0.0.1:"),
        ("MEDALLION_WAREHOUSE_URL", "cannot reach the warehouse (MEDALLION_WAREHOUSE_URL)"),
    ],
)
def test_run_with_its_catalog_or_warehouse_down_stops_before_any_step_in_one_line(
    project: Path, variable: str, said: str
):
    (project / ".medallion" / "s3" / "theworldshop-raw").mkdir(parents=True)  # raw is there
    url = f"postgresql://etl:S3cr%2Fet@127.0.0.1:{closed_port()}/db"
    line = assert_one_clear_error(medallion(project, "run", **{variable: url}), said)
    assert "S3cr" not in line and "Connection refused" in line and "Check" in line.title()


@pytest.mark.slow
def test_run_on_a_project_that_does_not_load_exits_2_listing_the_problems(project: Path):
    (project / "metadata" / "policies.yaml").write_text("default_retry_policy: nowhere\n")
    done = medallion(project, "run")
    assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr
    assert done.stderr.startswith(f"error: the project at {project} does not load:")
    assert "metadata/policies.yaml" in done.stderr


@pytest.mark.slow
def test_an_unreachable_s3_endpoint_is_one_line_naming_it_and_its_variable(project: Path):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    env = {
        "MEDALLION_S3_ENDPOINT": endpoint,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    for command in (("demo-data", "--rows", "20", "--days", "1"), ("run",)):
        assert_one_clear_error(
            medallion(project, *command, **env),
            f"cannot reach the S3 endpoint {endpoint} (MEDALLION_S3_ENDPOINT)",
            "Check that it is up",
        )


@pytest.mark.slow
def test_run_before_any_raw_data_exists_says_how_to_write_it(project: Path):
    assert_one_clear_error(
        medallion(project, "run"), "does not exist (NoSuchBucket)", "medallion demo-data"
    )
