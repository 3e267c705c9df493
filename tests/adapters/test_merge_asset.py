"""A MERGE INTO file in a project is an asset like any other: Dagster materializes it on Spark
from the raw objects through bronze, and each new delivery is merged into its current version."""

from __future__ import annotations

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import load_catalog
from medallion_assets.testing import read_table
from tests.adapters.minimal import minimal_project, orders

pytestmark = pytest.mark.slow

# The latest delivery of each order wins; a negative amount cancels the order. The preamble's
# temporary view runs first, in the step's Spark session.
LATEST_ORDERS = """
CREATE TEMPORARY VIEW delivered AS
  SELECT *, row_number() OVER (PARTITION BY order_id ORDER BY _ingested_at DESC,
                               _source_file DESC) AS newest
  FROM bronze.orders;

MERGE INTO silver.orders_latest AS t
USING (SELECT order_id, amount, upper(country) AS country FROM delivered WHERE newest = 1) AS s
ON t.order_id = s.order_id
WHEN MATCHED AND s.amount < 0 THEN DELETE
WHEN MATCHED THEN UPDATE SET amount = s.amount, country = s.country
WHEN NOT MATCHED AND s.amount >= 0 THEN INSERT (order_id, amount, country)
  VALUES (s.order_id, s.amount, s.country)
"""


def test_a_merge_table_materializes_through_dagster_and_merges_each_delivery(
    spark, tmp_path, monkeypatch
):
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
    )
    (root / "sql" / "silver" / "orders_latest.sql").write_text(LATEST_ORDERS)
    catalog = load_catalog(root, use_cache=False)
    assert catalog.datasets["silver.orders_latest"].upstream == ("bronze.orders",)
    job = definitions_for(
        catalog, DatasetTranslator(catalog)
    ).resolve_implicit_global_asset_job_def()
    selection = [table_key("bronze.orders"), table_key("silver.orders_latest")]
    instance = dg.DagsterInstance.ephemeral()
    lake = root / ".medallion" / "lake"

    def run() -> list[tuple]:
        result = job.execute_in_process(asset_selection=selection, instance=instance)
        assert result.success
        rows = read_table("silver.orders_latest", lake_root=lake)
        return sorted((int(r.order_id), float(r.amount), r.country) for r in rows.itertuples())

    assert run() == [(1, 5.0, "DE")]
    store.put(
        "minimal-raw",
        "orders/b.jsonl",
        orders(
            {"order_id": 1, "amount": 7, "country": "fr"},
            {"order_id": 2, "amount": 3, "country": "gb"},
            {"order_id": 3, "amount": -1, "country": "gb"},
        ),
    )
    assert run() == [(1, 7.0, "FR"), (2, 3.0, "GB")]
    store.put(
        "minimal-raw", "orders/c.jsonl", orders({"order_id": 2, "amount": -3, "country": "gb"})
    )
    assert run() == [(1, 7.0, "FR")]
    materialization = instance.get_latest_materialization_event(table_key("silver.orders_latest"))
    assert materialization is not None
    metadata = materialization.asset_materialization.metadata  # type: ignore[union-attr]
    assert "silver.orders_latest" in metadata["inputs"].value  # its own previous version
