"""Dev environments on a lake whose catalog Spark has not written a table to yet (its file made,
Iceberg's tables not): nothing to recover, no environment, no error (every `medallion run`
looks for promotions a stop left half-way before it starts)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from medallion_assets.lake import Lake


def test_a_catalog_without_iceberg_tables_yet_has_no_environments(tmp_path: Path):
    (tmp_path / "lake").mkdir()
    sqlite3.connect(tmp_path / "lake" / "catalog.db").close()
    lake = Lake.local(tmp_path / "lake")
    assert lake.exists()
    said: list[str] = []
    lake.environments().recover(said.append)
    assert said == [] and lake.environments().environments() == {}
    assert lake.environments().tables() == []
