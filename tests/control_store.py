"""The control store's URL for the tests that run on both of its databases (the ``url``
fixture: a folder's conftest imports it), and writers in several processes at once."""

from __future__ import annotations

import multiprocessing
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh control store: a SQLite file, or a new database on the throwaway PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state' / 'control.db'}"
    server = request.getfixturevalue("postgres_server")
    database = f"control_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    return str(server.dsn.rsplit("/", 1)[0] + f"/{database}")


def in_processes(target: Callable[..., None], arguments: Sequence[tuple[Any, ...]]) -> None:
    """Run ``target`` once per argument tuple, each in a fresh process (spawned, as run
    workers are), all at once; every one must exit cleanly."""
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=target, args=args) for args in arguments]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        assert process.exitcode == 0
