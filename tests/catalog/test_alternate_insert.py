"""An alternate producer written as ``INSERT INTO <table> SELECT ...`` writes the catalog
table's own columns by position, as Spark and every warehouse insert."""

from __future__ import annotations

import shutil
from pathlib import Path

from medallion_assets.catalog import load_catalog

MINIMAL = Path(__file__).parent / "minimal_project"


def test_an_alternate_insert_maps_by_position_onto_the_tables_columns(tmp_path: Path):
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    folder = root / "sql/alternates/silver"
    folder.mkdir(parents=True)
    (folder / "orders_direct.sql").write_text(
        "INSERT INTO silver.orders_clean\n"
        "SELECT o.order_id AS id, o.amount AS amt, upper(o.country) AS c FROM bronze.orders o\n"
    )
    datasets = root / "metadata/datasets.yaml"
    datasets.write_text(
        datasets.read_text().replace(
            "    criticality: high\n",
            "    criticality: high\n"
            "    alternates: [{name: direct, sql: alternates/silver/orders_direct.sql}]\n",
        )
    )
    catalog = load_catalog(root, use_cache=False)  # the alternate yields the primary's columns
    (alternate,) = catalog.datasets["silver.orders_clean"].alternates
    assert alternate.name == "direct"
