"""The control store's URL for the tests that run on both of its databases."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh control store: a SQLite file, or a new database on the throwaway PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state' / 'control.db'}"
    server = request.getfixturevalue("postgres_server")
    database = f"control_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server.dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    return str(server.dsn.rsplit("/", 1)[0] + f"/{database}")
