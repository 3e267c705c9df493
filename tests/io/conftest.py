"""The warehouse every load test runs on: DuckDB and a real PostgreSQL server, each fresh."""

from __future__ import annotations

import psycopg
import pytest

from medallion_assets.io.warehouse import DuckDBWarehouse, PostgresWarehouse


def fresh_postgres(dsn: str) -> PostgresWarehouse:
    """The session's server without the previous test's tables."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("DROP SCHEMA IF EXISTS mart CASCADE")
    return PostgresWarehouse(dsn)


@pytest.fixture(params=["duckdb", "postgres"])
def warehouse(request, tmp_path):
    if request.param == "duckdb":
        loaded = DuckDBWarehouse(tmp_path / "warehouse" / "wh.duckdb")
    else:
        loaded = fresh_postgres(request.getfixturevalue("postgres_server").dsn)
    yield loaded
    loaded.close()
