"""The demo project on each control store the CLI tests run against: the embedded SQLite file
and a database of its own on the throwaway PostgreSQL."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner, Result

from medallion_assets.cli import cli
from tests.conftest import copy_demo_project


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def project(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    root = copy_demo_project(tmp_path / "theworldshop")
    monkeypatch.setenv("MEDALLION_HOME", str(root / ".medallion"))
    monkeypatch.delenv("MEDALLION_CONTROL_URL", raising=False)
    if request.param == "postgresql":
        server = request.getfixturevalue("postgres_server")
        database = f"cli_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(server.dsn, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {database}")
        monkeypatch.setenv("MEDALLION_CONTROL_URL", server.dsn.rsplit("/", 1)[0] + f"/{database}")
    return root


def medallion(project: Path, *args: str) -> Result:
    result = CliRunner().invoke(cli, [*args, "--project", str(project)])
    return result


@pytest.fixture
def embedded_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedded defaults, as a new user has them: no MEDALLION_* variable and no
    DAGSTER_HOME, so state, raw data and the instance live under the project itself."""
    import os

    for name in list(os.environ):
        if name.startswith("MEDALLION_") or name == "DAGSTER_HOME":
            monkeypatch.delenv(name)


def invoke(*args: str) -> Result:
    """``medallion ARGS`` as a user types it, through click."""
    return CliRunner().invoke(cli, list(args))
