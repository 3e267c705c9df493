"""A key held by two source rows of a MERGE INTO is refused on the table's first build as on
every later one (Spark refuses it only when the target already has the key, so a first build
kept both rows, silently), or settled by ``keep_latest_by`` when the table says so. Real Spark
and Iceberg."""

from __future__ import annotations

import shutil
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from medallion_assets.catalog import CatalogError, load_catalog
from medallion_assets.lake import Lake
from medallion_assets.runtime.merge import MergeConflict, MergeNotRunnable
from medallion_assets.runtime.table_build import build_table
from medallion_assets.runtime.table_run import TableRun
from medallion_assets.testing import read_table
from tests.lake_helpers import publish_frame

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"

pytestmark = pytest.mark.slow

LATEST = """
MERGE INTO silver.orders_latest t
USING (SELECT order_id, country, amount, _source_file AS delivery FROM bronze.orders) s
ON t.order_id = s.order_id
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED THEN INSERT *
"""


def project(tmp_path: Path, settings: dict | None = None):
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    (root / "sql" / "silver" / "orders_latest.sql").write_text(LATEST)
    if settings is not None:
        path = root / "metadata" / "datasets.yaml"
        datasets = yaml.safe_load(path.read_text())
        datasets["datasets"]["silver.orders_latest"] = settings
        path.write_text(yaml.safe_dump(datasets))
    return load_catalog(root, use_cache=False), Lake.local(tmp_path / "lake")


def deliver(spark, lake: Lake, rows: list[tuple[int, str, str, str]]) -> None:
    """A version of bronze.orders holding ``rows`` (order_id, amount, country, source file)."""
    frame = spark.createDataFrame(
        [(i, Decimal(a), c, None, f, "b1") for i, a, c, f in rows],
        "order_id bigint, amount decimal(18,2), country string, _ingested_at timestamp, "
        "_source_file string, _batch_id string",
    )
    publish_frame(lake, spark, frame, "bronze.orders", "test", {})


def build(spark, lake: Lake, catalog):
    dataset = catalog.datasets["silver.orders_latest"]
    return build_table(
        TableRun(spark=spark, lake=lake, catalog=catalog, dataset=dataset, checks=False)
    )


def rows(lake: Lake) -> list[tuple]:
    frame = read_table("silver.orders_latest", lake_root=lake.root)
    return sorted((int(r.order_id), float(r.amount), r.delivery) for r in frame.itertuples())


def test_a_first_build_refuses_a_key_two_source_rows_hold_and_publishes_nothing(spark, tmp_path):
    catalog, lake = project(tmp_path)
    held_twice = [(1, "10", "DE", "a"), (1, "11", "DE", "b"), (2, "20", "FR", "a")]
    deliver(spark, lake, [*held_twice, (2, "21", "FR", "b"), (3, "30", "GB", "a")])
    with pytest.raises(MergeConflict) as refused:
        build(spark, lake, catalog)
    said = str(refused.value)
    assert said.startswith("sql/silver/orders_latest.sql: MERGE INTO silver.orders_latest: ")
    assert "2 key(s) (order_id) held by more than one source row" in said
    assert '{"order_id":1}' in said or '{"order_id":2}' in said
    assert "keep_latest_by" in said
    assert lake.current("silver.orders_latest") is None


def test_a_later_build_refuses_a_new_key_two_source_rows_hold(spark, tmp_path):
    catalog, lake = project(tmp_path)
    deliver(spark, lake, [(1, "10", "DE", "a")])
    first = build(spark, lake, catalog)
    deliver(spark, lake, [(1, "12", "DE", "b"), (5, "50", "FR", "b"), (5, "51", "FR", "c")])
    with pytest.raises(MergeConflict, match=r"1 key\(s\) \(order_id\).*\{\"order_id\":5\}"):
        build(spark, lake, catalog)
    assert lake.current("silver.orders_latest") == first.version
    assert rows(lake) == [(1, 10.0, "a")]


def test_keep_latest_by_keeps_each_keys_latest_row_and_refuses_a_tie(spark, tmp_path):
    catalog, lake = project(tmp_path, {"keep_latest_by": ["delivery"]})
    deliver(
        spark,
        lake,
        [(1, "10", "DE", "a"), (1, "11", "DE", "c"), (1, "12", "DE", "b"), (2, "20", "FR", "a")],
    )
    build(spark, lake, catalog)
    assert rows(lake) == [(1, 11.0, "c"), (2, 20.0, "a")]
    deliver(spark, lake, [(2, "22", "FR", "d"), (2, "23", "FR", "e"), (3, "30", "GB", "d")])
    build(spark, lake, catalog)
    assert rows(lake) == [(1, 11.0, "c"), (2, 23.0, "e"), (3, 30.0, "d")]
    deliver(spark, lake, [(4, "40", "DE", "f"), (4, "41", "DE", "f")])  # which is latest?
    with pytest.raises(MergeConflict, match=r"\{\"order_id\":4\}"):
        build(spark, lake, catalog)


def test_keep_latest_by_a_column_the_source_lacks_names_it(spark, tmp_path):
    catalog, lake = project(tmp_path, {"keep_latest_by": ["delivered_at"]})
    deliver(spark, lake, [(1, "10", "DE", "a")])
    with pytest.raises(MergeNotRunnable, match=r"orders_latest\.sql: keep_latest_by names "):
        build(spark, lake, catalog)


def test_keep_latest_by_on_a_select_file_is_refused_at_load(tmp_path):
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    path = root / "metadata" / "datasets.yaml"
    path.write_text(path.read_text() + "    keep_latest_by: [_ingested_at]\n")
    with pytest.raises(CatalogError) as refused:
        load_catalog(root, use_cache=False)
    said = str(refused.value)
    assert "metadata/datasets.yaml" in said and ":7" in said, said
    assert "keep_latest_by applies to a MERGE INTO file" in said
