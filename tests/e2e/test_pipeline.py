"""The whole TheWorldShop pipeline through Dagster on real components: moto's S3 server over
HTTP, a local Spark session, a PostgreSQL server as the warehouse. Every gold table must equal
an independent computation over the same raw data; a second run must change nothing."""

from __future__ import annotations

from pathlib import Path

import boto3
import dagster as dg
import pytest

from medallion_assets.adapters.headless import run_project
from medallion_assets.catalog import load_catalog
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.runtime.s3 import Boto3ObjectStore
from medallion_assets.runtime.warehouse import PostgresWarehouse
from medallion_assets.testing import read_table
from tests.conftest import copy_demo_project
from tests.e2e import reference

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, s3_server, postgres_server, spark):
    """Generate raw data into moto, run everything once, keep what the tests compare."""
    root = copy_demo_project(tmp_path_factory.mktemp("e2e") / "theworldshop")
    home = root / ".medallion"
    env = {
        "MEDALLION_HOME": str(home),
        "MEDALLION_S3_ENDPOINT": s3_server.endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "MEDALLION_WAREHOUSE_URL": postgres_server.dsn,
    }
    patch = pytest.MonkeyPatch()
    for name, value in env.items():
        patch.setenv(name, value)
    catalog = load_catalog(root)
    store = Boto3ObjectStore(s3_server.endpoint_url)
    # A clean vendor feed: every table builds, so every gold table can be compared (the 'UK'
    # mistake and the check that blocks it are tested on their own).
    clean = DemoSettings(rows=400, days=2, seed=7, vendor_uk_rate=0)
    write_files(generate(catalog, clean), store)
    instance = dg.DagsterInstance.ephemeral()
    first = run_project(root, log=lambda _m: None, instance=instance)
    client = boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name="us-east-1")
    expected, malformed = reference.compute(catalog, client)
    yield {
        "root": root,
        "catalog": catalog,
        "first": first,
        "expected": expected,
        "malformed": malformed,
        "instance": instance,
        "home": home,
        "dsn": postgres_server.dsn,
    }
    patch.undo()


def lake_rows(pipeline, table: str) -> list[tuple]:
    frame = read_table(table, lake_root=pipeline["home"] / "lake")
    return reference.normalise([tuple(r) for r in frame.itertuples(index=False)])


def reference_rows(pipeline, table: str) -> list[tuple]:
    return reference.normalise(pipeline["expected"].execute(f"SELECT * FROM {table}").fetchall())


def test_the_first_run_materializes_every_table(pipeline):
    first = pipeline["first"]
    assert first.success
    built = {r.table for r in first.results if not r.skipped}
    assert built == set(pipeline["catalog"].datasets)


# Every gold table has an independent computation in tests/e2e/reference.py.
GOLD_TABLES = (
    "gold.revenue_by_region",
    "gold.customer_ltv",
    "gold.daily_user_events",
    "gold.shipping_dashboard_feed",
    "gold.fraud_features",
    "gold.late_shipments",
    "gold.product_sales",
)


@pytest.mark.parametrize("table", GOLD_TABLES)
def test_gold_table_equals_the_independent_computation(pipeline, table):
    assert table in pipeline["catalog"].datasets
    assert lake_rows(pipeline, table) == reference_rows(pipeline, table)


def test_every_gold_table_of_the_catalog_is_compared():
    compared = set(GOLD_TABLES)
    catalog = load_catalog(Path(__file__).parents[2], use_cache=False)
    assert {n for n in catalog.datasets if n.startswith("gold.")} == compared


def test_malformed_records_are_quarantined_with_counts(pipeline):
    by_table = {}
    for result in pipeline["first"].results:
        if result.quarantined is not None:
            by_table[result.table] = by_table.get(result.table, 0) + result.quarantined
    for name, count in pipeline["malformed"].items():
        assert by_table[f"bronze.{name}"] == count, name
    assert sum(pipeline["malformed"].values()) > 0


def test_gold_tables_with_a_target_are_in_postgres_and_reconciled(pipeline):
    warehouse = PostgresWarehouse(pipeline["dsn"])
    try:
        for name, dataset in pipeline["catalog"].datasets.items():
            if dataset.target is None:
                continue
            lake = sum(r.rows for r in pipeline["first"].results if r.table == name)
            rows = warehouse.row_count(dataset.target.warehouse_table)
            if dataset.target.mode == "append":
                assert rows == lake, name  # each day appended once
            else:
                assert rows == len(lake_rows(pipeline, name)), name
    finally:
        warehouse.close()


def test_a_second_run_skips_everything_changes_no_gold_row_and_says_so(pipeline):
    gold = {t: lake_rows(pipeline, t) for t in pipeline["catalog"].datasets if t.startswith("gold")}
    second = run_project(pipeline["root"], log=lambda _m: None, instance=pipeline["instance"])
    assert second.success
    assert all(r.skipped for r in second.results), [
        r.table for r in second.results if not r.skipped
    ]
    assert {t: lake_rows(pipeline, t) for t in gold} == gold
    for table, rows in gold.items():
        assert len(rows) == len(set(rows)) or table == "gold.late_shipments", table
    logs = [
        record.user_message
        for run_id in second.run_ids
        for record in pipeline["instance"].all_logs(run_id)
    ]
    assert any("code and inputs unchanged" in m for m in logs)
    assert any("no new objects" in m for m in logs)
