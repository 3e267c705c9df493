"""``medallion table history|rollback``: a table's Iceberg snapshots, and making an earlier
version current again, audited, with the next build treating it as the current version."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from medallion_assets.cli import cli
from medallion_assets.control_plane import ControlPlane
from medallion_assets.lake import Lake
from tests.adapters.minimal import minimal_project, orders

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path, monkeypatch):
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
    )
    monkeypatch.setenv("MEDALLION_SPARK_LOG", str(tmp_path / "spark.log"))
    return root, store


def medallion(root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--project", str(root)])


def test_history_lists_versions_and_rollback_makes_an_earlier_one_current(spark, project):
    root, store = project
    lake = Lake.local(root / ".medallion" / "lake")
    assert medallion(root, "build", "bronze.orders").exit_code == 0
    first = lake.current("bronze.orders")
    store.put("minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7}))
    assert medallion(root, "build", "bronze.orders").exit_code == 0
    second = lake.current("bronze.orders")
    assert (first.rows, second.rows) == (1, 2)

    shown = medallion(root, "table", "history", "bronze.orders")
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[1].startswith(second.version_id) and lines[1].endswith("(current)")
    assert any(line.startswith(first.version_id) for line in lines[2:])

    back = medallion(
        root, "table", "rollback", "bronze.orders", "--to", first.version_id, "--reason", "bad b"
    )
    assert back.exit_code == 0, back.output
    assert lake.current("bronze.orders") == first
    assert sorted(
        Lake.local(root / ".medallion" / "lake").read_arrow([first])["order_id"].to_pylist()
    ) == [1]
    # main no longer lists the version rolled away from; --all still shows it, marked.
    assert second.version_id not in medallion(root, "table", "history", "bronze.orders").output
    every = medallion(root, "table", "history", "bronze.orders", "--all").output.splitlines()
    assert any(x.startswith(second.version_id) and x.endswith("(rolled away)") for x in every)
    assert any(x.startswith(first.version_id) and x.endswith("(current)") for x in every)
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    audited = plane.store().audit(entities=["dataset:bronze.orders"])
    assert any(e.kind == "rollback" and "bad b" in e.message for e in audited)

    # The next run sees the rolled-back version as current: built from fewer objects than
    # ingested, it is rebuilt from all of them (not appended to), and nothing is lost.
    assert medallion(root, "build", "bronze.orders").exit_code == 0
    assert lake.current("bronze.orders").rows == 2


def test_rollback_to_a_snapshot_the_table_lacks_is_one_line_and_changes_nothing(spark, project):
    root, _store = project
    assert medallion(root, "build", "bronze.orders").exit_code == 0
    lake = Lake.local(root / ".medallion" / "lake")
    before = lake.current("bronze.orders")
    result = medallion(root, "table", "rollback", "bronze.orders", "--to", "42", "--reason", "x")
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0
    assert "bronze.orders has no snapshot 42" in result.output
    assert lake.current("bronze.orders") == before
    unknown = medallion(root, "table", "history", "gold.nope")
    assert unknown.exit_code == 2 and "gold.nope is not a table of this project" in unknown.output


def test_gc_removes_old_orphan_files_and_stale_staging_branches_and_keeps_every_version(
    spark, project
):
    import os
    import time

    from medallion_assets.lake import versions
    from tests.lake_helpers import data_files

    root, store = project
    lake = Lake.local(root / ".medallion" / "lake")
    assert medallion(root, "build", "bronze.orders").exit_code == 0
    store.put("minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 7}))
    assert medallion(root, "build", "bronze.orders").exit_code == 0
    current = lake.current("bronze.orders")
    folder = data_files(lake, current)[0].parent
    old, fresh = folder / "00000-killed-build.parquet", folder / "00001-in-progress.parquet"
    old.write_bytes(b"PAR1" * 100)
    fresh.write_bytes(b"PAR1" * 10)
    four_days_ago = time.time() - 4 * 24 * 3600
    os.utime(old, (four_days_ago, four_days_ago))
    loaded = versions.load(versions.open_catalog(lake.catalog), "bronze.orders")
    with loaded.manage_snapshots() as refs:  # what a build killed in 2001 left
        refs.create_branch(int(current.version_id), "medallion_stage_1000000000_0a1b2c3d")

    planned = medallion(root, "table", "gc", "--dry-run")
    assert planned.exit_code == 0, planned.output
    assert f"bronze.orders: would remove file:{old} (400 bytes)" in planned.output
    assert "00001-in-progress" not in planned.output  # younger than --older-than
    assert "bronze.orders: would remove 1 staging branch(es) of killed builds" in planned.output
    assert old.exists()

    done = medallion(root, "table", "gc", "bronze.orders")
    assert done.exit_code == 0, done.output
    assert "removed 1 orphan file(s), 400 bytes, and 1 staging branch(es)" in done.output
    assert not old.exists() and fresh.exists()
    assert lake.doubt("bronze.orders", every_file=True) == ""  # every version's files kept
    every = medallion(root, "table", "history", "bronze.orders", "--all").output
    assert "medallion_stage_" not in every and len(every.splitlines()) >= 3
    again = medallion(root, "table", "gc", "--dry-run")
    assert "would remove 0 orphan file(s), 0 bytes, and 0 staging branch(es)" in again.output


def test_a_lost_metadata_file_is_named_with_its_repair_and_repair_brings_the_table_back(
    spark, project
):
    root, _store = project
    assert medallion(root, "run").exit_code == 0
    folder = root / ".medallion" / "lake" / "silver" / "orders_clean" / "metadata"
    newest = max(folder.glob("*.metadata.json"))
    newest.unlink()  # a cleanup gone wrong: the catalog points at a file that is gone

    failed = medallion(root, "run")
    assert failed.exit_code == 1, failed.output
    assert "LAKE_METADATA_LOST" in failed.output
    said = "".join(failed.output.split())  # the report wraps long paths
    assert f"itscurrentmetadatafile{newest}isgone" in said
    assert "medalliontablerepairsilver.orders_clean--reason" in said
    assert "catalog's server is up" not in failed.output  # not a catalog that is down
    lost = medallion(root, "doctor", "--deep")
    assert lost.exit_code == 2
    assert "FAIL  tables       silver.orders_clean: its current metadata file" in lost.output

    repaired = medallion(root, "table", "repair", "silver.orders_clean", "--reason", "test")
    assert repaired.exit_code == 0, repaired.output
    assert f"the catalog pointed at file:{newest}, which is gone; it now points at" in (
        repaired.output
    )
    assert medallion(root, "run").exit_code == 0
    whole = medallion(root, "doctor", "--deep")
    assert whole.exit_code == 0 and "ok    tables       3 of 3 version(s) in force whole" in (
        whole.output
    )
    again = medallion(root, "table", "repair", "silver.orders_clean", "--reason", "test")
    assert again.exit_code == 2 and "loads as it is" in again.output


def test_doctor_deep_names_a_deleted_data_file_and_build_rebuild_replaces_it(spark, project):
    """A run reads back a version's newest 8 data files; `doctor --deep` all of them, naming a
    damaged table with its fix, `medallion build TABLE --rebuild` (it builds even when code
    and inputs are unchanged; bronze reads every object again)."""
    from tests.lake_helpers import data_files

    root, _store = project
    assert medallion(root, "build", "bronze.orders").exit_code == 0
    lake = Lake.local(root / ".medallion" / "lake")
    before = lake.current("bronze.orders")
    for path in data_files(lake, before):
        path.unlink()

    said = medallion(root, "doctor", "--deep")
    assert said.exit_code == 2, said.output
    line = next(x for x in said.output.splitlines() if x.startswith("FAIL  tables"))
    assert "bronze.orders: its data file " in line and " is gone: " in line
    assert "medallion build bronze.orders --rebuild" in line

    assert medallion(root, "build", "bronze.orders", "--rebuild").exit_code == 0
    after = lake.current("bronze.orders")
    assert after.version_id != before.version_id and after.rows == 1
    assert medallion(root, "doctor", "--deep").exit_code == 0
    kept = medallion(root, "build", "bronze.orders")  # unchanged: a plain build keeps it
    assert kept.exit_code == 0 and lake.current("bronze.orders") == after
