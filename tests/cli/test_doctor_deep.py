"""`medallion doctor --deep` reads back every table's version in force and names a damaged one
with its fix; `medallion build TABLE --rebuild` is that fix (it builds even when code and
inputs are unchanged; bronze reads every object again). Real Spark, Iceberg and Dagster."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from medallion_assets.cli import cli
from medallion_assets.lake import Lake
from tests.adapters.minimal import minimal_project
from tests.lake_helpers import data_files

pytestmark = pytest.mark.slow


def medallion(*args: str, exit_code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == exit_code, result.output
    return result.output


def test_doctor_deep_names_a_deleted_file_and_build_rebuild_replaces_it(
    spark, tmp_path, monkeypatch
):
    root, _store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "DE"}
    )
    project = ["--project", str(root)]
    medallion("run", *project)
    assert "ok    tables       3 of 3 version(s) in force whole" in medallion(
        "doctor", "--deep", *project
    )
    lake = Lake.local(root / ".medallion" / "lake")
    before = lake.current("bronze.orders")
    assert before is not None
    for path in data_files(lake, before):
        path.unlink()

    said = medallion("doctor", "--deep", *project, exit_code=2)
    line = next(x for x in said.splitlines() if x.startswith("FAIL  tables"))
    assert "bronze.orders: its data file " in line and " is gone: " in line
    assert "medallion build bronze.orders --rebuild" in line

    built = medallion("build", "bronze.orders", "--rebuild", *project)
    assert "bronze.orders" in built and "built" in built
    after = lake.current("bronze.orders")
    assert after is not None and after.version_id != before.version_id and after.rows == 1
    assert "3 of 3 version(s) in force whole" in medallion("doctor", "--deep", *project)
    # Unchanged code and inputs: a plain build keeps the version, --rebuild makes a new one.
    medallion("build", "silver.orders_clean", *project)  # bronze's new version: built
    kept = lake.current("silver.orders_clean")
    assert "unchanged" in medallion("build", "silver.orders_clean", *project)
    medallion("build", "silver.orders_clean", "--rebuild", *project)
    assert lake.current("silver.orders_clean").version_id != kept.version_id
