"""Dev environments on real Spark and Iceberg, on the demo: a non-breaking and a breaking change,
planned, run each in an environment of its own at the same time, diffed, and promoted; ``main``
keeps its snapshot ids until a promotion; a promotion killed half-way is rolled back; after
promotion the tables equal a plain run of the changed project."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner

from medallion_assets.adapters.assets import ENV_TAG
from medallion_assets.adapters.headless import run_project
from medallion_assets.adapters.instance import project_instance
from medallion_assets.catalog import load_catalog
from medallion_assets.cli import cli
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.environments.diff import diff_table
from medallion_assets.environments.plan import plan
from medallion_assets.environments.published import main_of, project_of
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.lake import Lake
from medallion_assets.testing import read_table
from tests.conftest import copy_demo_project

pytestmark = pytest.mark.slow

NON_BREAKING = (
    "silver/payments.sql",
    "    p.payment_id,\n    p.order_id,",
    "    p.payment_id,\n    1 AS one,\n    p.order_id,",
)
BREAKING = (
    "silver/products.sql",
    "coalesce(category, 'uncategorized') AS category",
    "coalesce(lower(category), 'none') AS category",
)
BROKEN = ["silver.products", "silver.order_items", "gold.product_sales"]


def edit(root: Path, change: tuple[str, str, str]) -> None:
    path, old, new = change
    sql = root / "sql" / path
    text = sql.read_text()
    assert old in text, f"{path} no longer holds {old!r}: pick another change"
    sql.write_text(text.replace(old, new))


def medallion(root: Path, *args: str):
    done = CliRunner().invoke(cli, [*args, "--project", str(root)])
    assert done.exit_code == 0, done.output
    return done.output


def heads(lake: Lake) -> dict[str, dict[str, int]]:
    """Every table's main and day tags: what readers of main see."""
    found = {}
    for table in lake.environments().tables():
        refs = lake.refs_of(table)
        found[table] = {n: s for n, s in refs.items() if n == "main" or n.startswith("medallion_")}
    return found


@pytest.fixture(scope="module")
def shop(spark, tmp_path_factory):
    """The demo built on main, and two copies of its folder with a change each, beside it."""
    patch = pytest.MonkeyPatch()
    base = tmp_path_factory.mktemp("envs")
    root = copy_demo_project(base / "shop")
    home = root / ".medallion"
    patch.setenv("MEDALLION_HOME", str(home))
    patch.setenv("MEDALLION_MAX_WORKERS", "2")
    for name in ("MEDALLION_LAKE", "MEDALLION_S3_ENDPOINT", "MEDALLION_WAREHOUSE_URL"):
        patch.delenv(name, raising=False)
    catalog = load_catalog(root)
    files = generate(catalog, DemoSettings(rows=300, days=1, seed=3))
    write_files(files, LocalFolderObjectStore(home / "s3"))
    first = run_project(root, log=lambda _m: None)
    assert not first.having("failed"), first.results
    yield {"root": root, "home": home, "lake": Lake.local(home / "lake")}
    patch.undo()


def test_environments_plan_run_diff_and_promote_without_touching_main(shop, spark, tmp_path):
    root, lake = shop["root"], shop["lake"]
    before = heads(lake)

    # Two changes, each in its own environment, planned against main.
    edit(root, NON_BREAKING)
    said = medallion(root, "plan", "--env", "tidy")
    assert "silver.payments" in said and "changed directly, non-breaking" in said
    tidy = plan(project_of(load_catalog(root)), main_of(lake, load_catalog(root)))
    assert tidy.to_build == ["silver.payments"]
    run = run_project(root, log=lambda _m: None, env="tidy", tables=tidy.to_build)
    assert [r.status for r in run.results] == ["built"], run.results

    edit(root, (NON_BREAKING[0], NON_BREAKING[2], NON_BREAKING[1]))  # back: only the other
    edit(root, BREAKING)
    catalog = load_catalog(root)
    broken = plan(project_of(catalog), main_of(lake, catalog))
    assert broken.to_build == BROKEN
    assert broken.of("silver.products").breaking
    assert "silver.order_items reads category" in broken.of("silver.products").why
    run = run_project(root, log=lambda _m: None, env="brk", tables=broken.to_build)
    assert sorted(r.table for r in run.results if r.status == "built") == sorted(BROKEN)
    # Dagster: the environment's runs are tagged, its materializations name the branch.
    with project_instance(root) as instance:
        tagged = instance.get_runs(filters=dg.RunsFilter(tags={ENV_TAG: "brk"}))
        assert {r.run_id for r in tagged} == set(run.run_ids)
        events = instance.all_logs(
            run.run_ids[0], of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
        )
        metadata = [e.dagster_event.event_specific_data.materialization.metadata for e in events]
        assert len(metadata) == len(BROKEN)
        assert {(m["environment"].value, m["lake_branch"].value) for m in metadata} == {
            ("brk", "env_brk")
        }

    # main is untouched: the same snapshot ids on every table and day tag.
    assert heads(lake) == before
    # Each environment sees its own change and main's versions of the rest, not the other's.
    tidy_lake, brk_lake = lake.in_env("tidy"), lake.in_env("brk")
    main_products = lake.current("silver.products").version_id
    assert tidy_lake.current("silver.products").version_id == main_products
    assert brk_lake.current("silver.products").version_id != main_products
    assert (
        brk_lake.current("silver.payments").version_id == lake.current("silver.payments").version_id
    )
    assert (
        "one" in read_table("silver.payments", lake_root=shop["home"] / "lake", env="tidy").columns
    )
    listed = medallion(root, "env", "list")
    assert "tidy: 1 table(s)" in listed and "brk: 3 table(s)" in listed

    # diff: by keys, the changed column named, a sample of changed rows.
    found = diff_table(spark, lake, catalog, "brk", "gold.product_sales")
    assert (found.added, found.removed) == (0, 0) and found.changed > 0
    assert [c.column for c in found.columns if c.differs] == ["category"]
    assert found.sample and all("category" in row for row in found.sample)

    # A run in the environment that rebuilt an input but stopped before its readers: refused
    # (a reader built from an input version the environment no longer has), then run again.
    again = run_project(
        root, log=lambda _m: None, env="brk", tables=["silver.products"], full_refresh="*"
    )
    assert [r.status for r in again.results] == ["built"]
    stale = CliRunner().invoke(cli, ["promote", "brk", "--project", str(root)])
    assert stale.exit_code == 2, stale.output
    assert "silver.order_items: built from inputs the environment has rebuilt since" in stale.output
    rerun = run_project(root, log=lambda _m: None, env="brk", tables=broken.to_build)
    assert {r.table: r.status for r in rerun.results} == {
        "silver.products": "unchanged", "silver.order_items": "built",
        "gold.product_sales": "built",
    }  # fmt: skip

    # A promotion killed half-way (before its third table moved) leaves main as before.
    killed = subprocess.run(
        [sys.executable, "-c", "from medallion_assets.cli import main; main()", "promote", "brk",
         "--project", str(root)],
        env={**os.environ, "MEDALLION_CRASH_AT": "env.promoting@gold.product_sales"},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert lake.refs_of("silver.products")["main"] != before["silver.products"]["main"]  # half
    medallion(root, "env", "list")  # any environment command finishes or rolls it back first
    assert heads(lake) == before

    # Promoted: main takes the environment's snapshots as they are, nothing recomputed.
    promoted = {t: brk_lake.current(t).version_id for t in BROKEN}
    said = medallion(root, "promote", "brk")
    assert "promoted environment brk to main" in said
    assert {t: lake.current(t).version_id for t in BROKEN} == promoted
    assert "brk" not in medallion(root, "env", "list")
    # ... and equal a plain full run of the changed project.
    promoted_rows = {t: _rows(shop, t) for t in BROKEN}
    again = run_project(root, log=lambda _m: None, full_refresh=",".join(BROKEN))
    assert not again.having("failed")
    assert {t: _rows(shop, t) for t in BROKEN} == promoted_rows

    # The other environment: refused while the folder holds code it was not built from, then
    # promoted too (main did not move under silver.payments).
    edit(root, NON_BREAKING)
    edit(root, (NON_BREAKING[0], "1 AS one", "2 AS one"))
    refused = CliRunner().invoke(cli, ["promote", "tidy", "--project", str(root)])
    assert refused.exit_code == 2, refused.output
    assert "silver.payments: built from other code" in refused.output
    edit(root, (NON_BREAKING[0], "2 AS one", "1 AS one"))
    assert "promoted environment tidy to main" in medallion(root, "promote", "tidy")
    assert "one" in read_table("silver.payments", lake_root=shop["home"] / "lake").columns
    assert "nothing to build" in medallion(root, "plan", "--env", "next")


def _rows(shop, table: str) -> list[tuple]:
    frame = read_table(table, lake_root=shop["home"] / "lake")
    return sorted(map(tuple, frame.astype(str).itertuples(index=False)))
