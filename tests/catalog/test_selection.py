"""``--select``: tables, globs, layer:/tag:/pipeline: terms, and a term that names nothing."""

from __future__ import annotations

import pytest

from medallion_assets.catalog.selection import select_tables


def test_each_kind_of_term_selects_its_tables_in_execution_order(demo_catalog):
    bronze = select_tables(demo_catalog, "layer:bronze")
    assert bronze and all(t.startswith("bronze.") for t in bronze)
    assert bronze == tuple(t for t in demo_catalog.datasets if t.startswith("bronze."))
    assert select_tables(demo_catalog, "bronze.*") == bronze
    pii = select_tables(demo_catalog, "tag:pii")
    assert pii == tuple(n for n, d in demo_catalog.datasets.items() if "pii" in d.tags)
    core = select_tables(demo_catalog, "pipeline:core_daily")
    assert core == demo_catalog.pipeline_datasets("core_daily")
    union = select_tables(demo_catalog, "gold.customer_ltv , layer:bronze,gold.customer_ltv")
    assert union == (*bronze, "gold.customer_ltv")


@pytest.mark.parametrize(
    ("selection", "says"),
    [
        ("silver.orders_us", "'silver.orders_us' matches no table in this project; did you mean"),
        ("platinum.*", "'platinum.*' matches no table"),
        ("layer:silvr", "did you mean layer:silver?"),
        ("tag:nope", "known tags: "),
        ("pipeline:nope", "known pipelines: "),
        ("owner:me", "'owner' is not a kind of selection"),
        ("", "names no table"),
    ],
)
def test_a_term_that_names_nothing_is_refused_not_dropped(demo_catalog, selection, says):
    with pytest.raises(ValueError, match="--select") as error:
        select_tables(demo_catalog, f"bronze.orders,{selection}" if selection else " , ")
    assert says in str(error.value)
