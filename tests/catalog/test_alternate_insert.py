"""An alternate producer written as ``INSERT INTO <table> SELECT ...`` writes the catalog
table's own columns by position, as Spark and every warehouse insert."""

from __future__ import annotations

import shutil
from pathlib import Path

from medallion_assets.catalog import load_catalog

MINIMAL = Path(__file__).parent / "minimal_project"


def project_with_insert_alternate(tmp_path: Path) -> Path:
    """The minimal project whose silver.orders_clean has an alternate inserting other names."""
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
    return root


def test_an_alternate_insert_maps_by_position_onto_the_tables_columns(tmp_path: Path):
    # Mapped by the select's names, the alternate would yield other columns than the primary.
    catalog = load_catalog(project_with_insert_alternate(tmp_path), use_cache=False)
    (alternate,) = catalog.datasets["silver.orders_clean"].alternates
    assert alternate.name == "direct"
