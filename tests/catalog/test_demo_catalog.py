"""TheWorldShop loads into a complete catalog, and per-file settings reach the datasets."""

from __future__ import annotations

import shutil
from pathlib import Path

from medallion_assets.catalog import load_catalog
from medallion_assets.catalog.metadata_files import METADATA_FILES
from tests.conftest import REPO

MINIMAL = Path(__file__).parent / "minimal_project"


def test_every_metadata_file_of_the_design_exists_with_content():
    for stem in METADATA_FILES:
        path = REPO / "metadata" / f"{stem}.yaml"
        assert path.is_file(), path
        assert len(path.read_text().strip().splitlines()) >= 3, path


def test_demo_sources_have_declared_schemas_and_formats(demo_catalog):
    formats = {name: s.format for name, s in demo_catalog.sources.items()}
    assert {
        "orders": "jsonl",
        "customers": "csv",
        "address_validation_feed": "csv",
        "fx_rates": "parquet",
        "products": "csv",
        "user_events": "jsonl",
    }.items() <= formats.items()
    assert {"email", "phone"} <= set(demo_catalog.sources["customers"].pii_columns)
    assert demo_catalog.sources["user_events"].partition == "dt={date}"
    assert all(s.columns for s in demo_catalog.sources.values())


def test_demo_has_the_shapes_lineage_needs(demo_catalog):
    graph = demo_catalog.lineage
    assert len(demo_catalog.datasets) >= 15
    assert {d.layer for d in demo_catalog.datasets.values()} == {"bronze", "silver", "gold"}
    # fan-out: one table feeds several; fan-in: one table reads several
    assert max(len(graph.dag.children(n)) for n in demo_catalog.datasets) >= 3
    assert max(len(d.upstream) for d in demo_catalog.datasets.values()) >= 3
    # diamond: bronze.orders reaches gold.product_sales through two silver tables
    paths = [
        p
        for p in ("silver.orders_usd", "silver.order_items")
        if "bronze.orders" in graph.upstream(p) and "gold.product_sales" in graph.downstream(p)
    ]
    assert len(paths) == 2
    critical = [n for n, d in demo_catalog.datasets.items() if d.criticality == "critical"]
    assert len(critical) >= 2
    assert len(demo_catalog.exposures) >= 3
    assert all(e.owners for e in demo_catalog.exposures.values())


def test_demo_has_an_alternate_producer_and_a_replica(demo_catalog):
    addresses = demo_catalog.datasets["silver.addresses_validated"]
    (alternate,) = addresses.alternates
    assert alternate.upstream == ("bronze.customers",)
    assert alternate.cost > 1
    assert "bronze.customers" not in addresses.upstream
    (replica,) = demo_catalog.sources["customers"].replicas
    assert replica.bucket == "theworldshop-raw-replica"


def test_rules_from_rule_sets_and_inline_rules_reach_the_dataset(demo_catalog):
    addresses = demo_catalog.datasets["silver.addresses_validated"]
    kinds = {r.kind for r in addresses.rules}
    assert "accepted_values" in kinds


def test_throttled_system_follows_the_layer(demo_catalog):
    datasets = demo_catalog.datasets
    assert datasets["bronze.orders"].system == demo_catalog.sources["orders"].system
    assert datasets["gold.revenue_by_region"].system == "redshift"
    assert datasets["silver.orders_usd"].system == demo_catalog.project.compute_system


def test_pipelines_select_by_layer_tag_and_sinks(demo_catalog):
    for pipeline_id, pipeline in demo_catalog.pipelines.items():
        chosen = demo_catalog.pipeline_datasets(pipeline_id)
        assert chosen, pipeline_id
        for sink in pipeline.select.sinks:
            assert sink in chosen
            assert set(demo_catalog.lineage.upstream(sink)) & set(demo_catalog.datasets) <= set(
                chosen
            )
        for layer in pipeline.select.layers:
            assert {n for n, d in demo_catalog.datasets.items() if d.layer == layer} <= set(chosen)


def _minimal(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    shutil.copytree(MINIMAL, root)
    return root


def test_a_file_may_declare_its_dialect_in_a_header_comment(tmp_path: Path):
    root = _minimal(tmp_path)
    # Redshift's NVL and GETDATE parse only in the redshift dialect's sense.
    (root / "sql/gold/revenue.sql").write_text(
        "-- dialect: redshift\n"
        "SELECT country, SUM(NVL(amount, 0)) AS revenue, GETDATE() AS built_at\n"
        "FROM silver.orders_clean GROUP BY country\n"
    )
    revenue = load_catalog(root, use_cache=False).datasets["gold.revenue"]
    assert revenue.dialect == "redshift"
    assert {c.column: c.sources for c in revenue.columns}["revenue"] == (
        "silver.orders_clean.amount",
    )


def test_datasets_yaml_may_set_a_files_dialect_and_the_project_its_default(tmp_path: Path):
    root = _minimal(tmp_path)
    (root / "metadata/project.yaml").write_text("name: minimal\ndialect: ansi\n")
    datasets = (root / "metadata/datasets.yaml").read_text()
    (root / "metadata/datasets.yaml").write_text(
        datasets + "  gold.revenue:\n    dialect: bigquery\n"
    )
    (root / "sql/gold/revenue.sql").write_text(
        "SELECT country, SUM(amount) AS revenue FROM `silver.orders_clean` GROUP BY country\n"
    )
    catalog = load_catalog(root, use_cache=False)
    assert catalog.datasets["gold.revenue"].dialect == "bigquery"
    assert catalog.datasets["silver.orders_clean"].dialect == "ansi"


def test_code_version_changes_with_the_sql_and_with_the_metadata(tmp_path: Path):
    root = _minimal(tmp_path)
    before = load_catalog(root, use_cache=False).datasets
    assert load_catalog(root, use_cache=False).datasets["gold.revenue"].code_version == (
        before["gold.revenue"].code_version
    )
    sql = root / "sql/gold/revenue.sql"
    sql.write_text(sql.read_text().replace("sum(amount)", "sum(amount) * 1"))
    after_sql = load_catalog(root, use_cache=False).datasets
    assert after_sql["gold.revenue"].code_version != before["gold.revenue"].code_version
    assert after_sql["silver.orders_clean"].code_version == (
        before["silver.orders_clean"].code_version
    )
    datasets = root / "metadata/datasets.yaml"
    datasets.write_text(datasets.read_text().replace("criticality: high", "criticality: low"))
    after_meta = load_catalog(root, use_cache=False).datasets
    assert after_meta["silver.orders_clean"].code_version != (
        before["silver.orders_clean"].code_version
    )


def test_a_project_table_under_a_cte_name_is_not_a_dependency(tmp_path: Path):
    root = _minimal(tmp_path)
    (root / "sql/gold/revenue.sql").write_text(
        "WITH orders AS (SELECT country, amount FROM silver.orders_clean)\n"
        "SELECT country, sum(amount) AS revenue FROM orders GROUP BY country\n"
    )
    assert load_catalog(root, use_cache=False).datasets["gold.revenue"].upstream == (
        "silver.orders_clean",
    )
