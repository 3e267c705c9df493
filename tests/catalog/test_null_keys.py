"""A merge key proved non-null through bronze's casts: Spark 4 runs in ANSI mode, where a CAST
that cannot convert fails the query, so a CAST of a ``nullable: false`` source column is never
NULL; a TRY_CAST is (sqlglot reads both as TryCast, a written TRY_CAST marked ``safe``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_assets.catalog import CatalogError, load_catalog

BRONZE_RULE = (
    "{kind: not_null, columns: [order_id, customer_id, order_ts, currency, total_amount, items]}"
)


def _without_order_id_rules(project: Path) -> None:
    """The demo with no not_null rule on the order_id of bronze.orders or silver.orders_usd
    (its check group): silver.orders_usd's merge key is proved from sources.yaml
    (``order_id``: ``nullable: false``) through bronze's SQL alone."""
    path = project / "metadata" / "datasets.yaml"
    text = path.read_text()
    assert BRONZE_RULE in text and "    checks: [order_keys]\n" in text
    text = text.replace(BRONZE_RULE, BRONZE_RULE.replace("order_id, ", ""))
    path.write_text(text.replace("    checks: [order_keys]\n", "", 1))


def test_a_key_cast_from_a_declared_non_null_source_column_is_proved(demo_project: Path):
    _without_order_id_rules(demo_project)
    catalog = load_catalog(demo_project, use_cache=False)
    assert catalog.datasets["silver.orders_usd"].settings.keys == ("order_id",)


def test_a_key_made_by_try_cast_may_be_null(demo_project: Path):
    _without_order_id_rules(demo_project)
    sql = demo_project / "sql" / "bronze" / "orders.sql"
    text = sql.read_text()
    sql.write_text(text.replace("CAST(order_id AS BIGINT)", "TRY_CAST(order_id AS BIGINT)"))
    with pytest.raises(CatalogError) as failed:
        load_catalog(demo_project, use_cache=False)
    found = [str(issue) for issue in failed.value.issues]
    assert any(
        "kind merge of silver.orders_usd matches rows by 'order_id', which may be NULL" in issue
        for issue in found
    ), found
