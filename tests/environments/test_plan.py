"""The plan of a dev environment on the demo project: each change to a copy of it classified
against a ``main`` that holds the demo as it is (its code versions and SQL fingerprints)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.environments.plan import DIRECT, INDIRECT, NEW, UNCHANGED, Published, plan
from medallion_assets.environments.published import project_of
from tests.conftest import copy_demo_project


@pytest.fixture(scope="module")
def main(demo_catalog):
    """``main`` as a run of the demo publishes it."""
    project = project_of(demo_catalog)
    return {
        table: Published(frozenset({code}), project.shape(table))
        for table, code in project.code_versions.items()
    }


def changed(tmp_path: Path, path: str, old: str, new: str):
    root = copy_demo_project(tmp_path / "shop")
    sql = root / "sql" / path
    text = sql.read_text()
    assert old in text, f"{path} no longer holds {old!r}: pick another change"
    sql.write_text(text.replace(old, new))
    return project_of(load_catalog(root))


def test_the_demo_against_itself_builds_nothing(demo_catalog, main):
    found = plan(project_of(demo_catalog), main)
    assert found.to_build == []
    assert {c.status for c in found.changes} == {UNCHANGED}


def test_an_added_column_nobody_reads_is_non_breaking_and_builds_only_its_table(tmp_path, main):
    project = changed(
        tmp_path, "silver/products.sql", "    updated_at\nFROM ranked",
        "    updated_at,\n    upper(sku) AS sku_upper\nFROM ranked",
    )  # fmt: skip
    found = plan(project, main)
    products = found.of("silver.products")
    assert products is not None
    assert (products.status, products.breaking, products.added) == (DIRECT, False, ("sku_upper",))
    assert found.to_build == ["silver.products"]
    assert found.of("silver.order_items").status == UNCHANGED


def test_a_column_computed_differently_that_a_reader_joins_or_selects_is_breaking(tmp_path, main):
    project = changed(
        tmp_path, "silver/products.sql", "coalesce(category, 'uncategorized') AS category",
        "coalesce(lower(category), 'none') AS category",
    )  # fmt: skip
    found = plan(project, main)
    products = found.of("silver.products")
    assert products.breaking and products.changed == ("category",)
    assert "silver.order_items reads category" in products.why
    assert found.of("silver.order_items").status == INDIRECT
    assert found.of("gold.product_sales").status == INDIRECT  # reads order_items: reached too
    assert found.to_build == ["silver.products", "silver.order_items", "gold.product_sales"]


def test_a_changed_column_no_reader_reads_is_non_breaking(tmp_path, main):
    project = changed(
        tmp_path, "silver/products.sql", "    weight_grams,\n    updated_at\nFROM",
        "    weight_grams * 1 AS weight_grams,\n    updated_at\nFROM",
    )  # fmt: skip
    found = plan(project, main)
    products = found.of("silver.products")
    assert products.changed == ("weight_grams",) and not products.breaking
    assert found.to_build == ["silver.products"]


def test_a_changed_filter_changes_the_rows_every_reader_reads(tmp_path, main):
    project = changed(
        tmp_path, "silver/products.sql", "WHERE version_rank = 1",
        "WHERE version_rank = 1 AND is_active",
    )  # fmt: skip
    found = plan(project, main)
    products = found.of("silver.products")
    assert products.rows and products.breaking
    assert "silver.order_items reads its rows" in products.why
    # order_items' referential integrity rule on product_id reads it too: named
    assert any(w.startswith("rule ") and "of silver.order_items reads" in w for w in products.why)
    assert "silver.order_items" in found.to_build


def test_a_removed_column_nobody_reads_is_non_breaking(tmp_path, main):
    # (a column a reader reads cannot be removed: the project then does not load, issue 46)
    project = changed(
        tmp_path, "silver/products.sql", "    weight_grams,\n    updated_at\nFROM",
        "    updated_at\nFROM",
    )  # fmt: skip
    found = plan(project, main)
    products = found.of("silver.products")
    assert products.removed == ("weight_grams",) and not products.breaking
    assert "nothing reads what changed" in products.why
    assert found.to_build == ["silver.products"]


def test_a_gold_table_changed_names_its_warehouse_table_and_exposures(tmp_path, main, demo_catalog):
    sql = demo_catalog.datasets["gold.revenue_by_region"].sql
    assert "SUM(" in sql.upper()
    project = changed(
        tmp_path,
        "gold/revenue_by_region.sql",
        "FROM with_region\nGROUP BY",
        "FROM with_region\nWHERE region <> 'UNKNOWN'\nGROUP BY",
    )
    found = plan(project, main)
    change = found.of("gold.revenue_by_region")
    assert change.breaking and change.rows
    assert any(line.startswith("warehouse table ") for line in change.why)
    assert any(line.startswith("exposure finance_revenue_dashboard") for line in change.why)


def test_a_table_main_lacks_is_new_and_what_reads_it_is_rebuilt(demo_catalog, main):
    project = project_of(demo_catalog)
    without = {t: p for t, p in main.items() if t != "silver.products"}
    found = plan(project, without)
    assert found.of("silver.products").status == NEW
    assert found.of("silver.order_items").status == INDIRECT


def test_a_version_without_recorded_fingerprints_counts_every_reader_as_reached(demo_catalog, main):
    project = project_of(demo_catalog)
    old = {**main, "silver.products": Published(frozenset({"older"}), None)}
    found = plan(project, old)
    assert found.of("silver.products").breaking
    assert found.of("silver.order_items").status == INDIRECT
