"""A file with a preamble (temporary functions, variables, temporary views and tables) builds
on real Spark: the preamble runs in the step's session before the write."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.control.store import ControlStore
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.lake import Lake
from medallion_assets.recovery.reroute import along, routes
from medallion_assets.runtime.ingest.bronze_ingest import ingest
from medallion_assets.runtime.table_build import build_table
from medallion_assets.runtime.table_run import TableRun
from medallion_assets.testing import read_table
from tests.catalog.test_alternate_insert import project_with_insert_alternate

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"

pytestmark = pytest.mark.slow

SILVER = """-- dialect: bigquery
CREATE TEMP FUNCTION norm(c STRING) AS (UPPER(TRIM(c)));
DECLARE min_amount INT64 DEFAULT 100;
SET min_amount = 0;
CREATE TEMP TABLE positive AS
  SELECT order_id, amount, country FROM bronze.orders WHERE amount >= min_amount;
CREATE TEMP VIEW named AS SELECT order_id, amount, norm(country) AS country FROM positive;
SELECT order_id, amount, country FROM named
"""

GOLD = """-- dialect: postgres
CREATE TABLE gold.revenue (country, revenue) AS
SELECT lower(country), sum(amount) FROM silver.orders_clean GROUP BY 1
"""


def test_a_silver_table_with_a_preamble_builds_and_publishes_the_right_rows(spark, tmp_path):
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    (root / "sql/silver/orders_clean.sql").write_text(SILVER)
    (root / "sql/gold/revenue.sql").write_text(GOLD)
    catalog = load_catalog(root, use_cache=False)
    silver = catalog.datasets["silver.orders_clean"]
    assert silver.upstream == ("bronze.orders",)
    lineage = {c.column: c.sources for c in silver.columns}
    assert lineage == {
        "order_id": ("bronze.orders.order_id",),
        "amount": ("bronze.orders.amount",),
        "country": ("bronze.orders.country",),
    }
    assert [c.column for c in catalog.datasets["gold.revenue"].columns] == ["country", "revenue"]

    store = LocalFolderObjectStore(tmp_path / "s3")
    store.ensure_bucket("minimal-raw")
    rows = [
        {"order_id": 1, "amount": 10, "country": " de"},
        {"order_id": 2, "amount": 5, "country": "DE "},
        {"order_id": 3, "amount": -1, "country": "fr"},
    ]
    store.put("minimal-raw", "orders/a.jsonl", "\n".join(json.dumps(r) for r in rows).encode())
    lake = Lake.local(tmp_path / "lake")
    ingest_orders(spark, catalog, lake, store, tmp_path)
    built = build_table(TableRun(spark=spark, lake=lake, catalog=catalog, dataset=silver))
    build_table(
        TableRun(spark=spark, lake=lake, catalog=catalog, dataset=catalog.datasets["gold.revenue"])
    )

    assert built.version.rows == 2
    published = read_table("silver.orders_clean", lake_root=lake.root)
    assert sorted(published["order_id"].tolist()) == [1, 2]
    assert set(published["country"]) == {"DE"}
    revenue = read_table("gold.revenue", lake_root=lake.root)
    assert [(r["country"], float(r["revenue"])) for r in revenue.to_dict("records")] == [
        ("de", 15.0)
    ]


def ingest_orders(spark, catalog, lake: Lake, store, tmp_path: Path) -> None:
    """bronze.orders ingested from ``store``, its manifest in a control store in ``tmp_path``."""
    run = TableRun(
        spark=spark,
        lake=lake,
        catalog=catalog,
        dataset=catalog.datasets["bronze.orders"],
        control=ControlStore.open(f"sqlite:///{tmp_path / 'control.db'}"),
    )
    ingest(run, store)


def test_an_alternate_insert_writes_the_tables_columns_by_position(spark, tmp_path):
    root = project_with_insert_alternate(tmp_path)
    catalog = load_catalog(root, use_cache=False)
    store = LocalFolderObjectStore(tmp_path / "s3")
    store.ensure_bucket("minimal-raw")
    store.put("minimal-raw", "orders/a.jsonl", b'{"order_id": 4, "amount": 2, "country": "fr"}\n')
    lake = Lake.local(tmp_path / "lake")
    ingest_orders(spark, catalog, lake, store, tmp_path)
    primary = catalog.datasets["silver.orders_clean"]
    (route,) = [r for r in routes(catalog, primary) if r.alternate is not None]
    build_table(TableRun(spark=spark, lake=lake, catalog=catalog, dataset=along(primary, route)))
    published = read_table("silver.orders_clean", lake_root=lake.root)
    assert published.to_dict("records") == [{"order_id": 4, "amount": 2, "country": "FR"}]


@pytest.mark.parametrize(
    "view",
    [
        "CREATE TEMP VIEW v (a, b) AS SELECT 1 AS x, 'p' AS y",
        "CREATE TEMP VIEW v (a COMMENT 'first', b) AS VALUES (1, 'p')",
        "CREATE TEMP VIEW v AS VALUES (1, 'p') AS t(a, b)",
    ],
)
def test_a_temporary_view_with_a_column_list_or_values_runs_under_its_names(spark, view):
    from medallion_assets.lineage.script import spark_preamble, spark_sql
    from medallion_assets.lineage.statement import parse_script

    sql = f"{view};\nSELECT a, b FROM v"
    script, statement = parse_script(sql, "spark", "out", inline=False)
    assert [p.name for p in script.preamble] == ["v"]
    for preamble in spark_preamble(script, "spark"):
        spark.sql(spark_sql(preamble))
    assert spark.sql(spark_sql(statement.expression)).collect() == [(1, "p")]
