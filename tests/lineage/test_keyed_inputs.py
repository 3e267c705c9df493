"""Which inputs of a merge table besides its driving one are keyed: every read of them joined
to the driving rows on a key, so their changed rows name the keys to recompute. Anything the
check cannot prove leaves the input unkeyed (a change to it rebuilds the table)."""

from __future__ import annotations

import pytest

from medallion_assets.lineage.incremental import incremental
from medallion_assets.lineage.statement import parse_statement

ORDERS = "FROM s.orders o"


def keyed(sql: str, keys: list[str], driving: str | None = "s.orders") -> dict[str, dict]:
    statement = parse_statement(sql, "spark", "g.t")
    plan = incremental(statement, "merge", keys, driving)
    return {table: dict(pairs) for table, pairs in plan.keyed}


@pytest.mark.parametrize(
    ("sql", "keys", "expected"),
    [
        # joined on the key's driving column, among other ANDed terms
        (
            f"SELECT o.id, u.name {ORDERS} LEFT JOIN s.users u ON u.oid = o.id AND u.ok",
            ["id"],
            {"s.users": {"id": "oid"}},
        ),
        (
            f"SELECT o.id, u.name {ORDERS} JOIN s.users u ON o.id = u.oid",
            ["id"],
            {"s.users": {"id": "oid"}},
        ),
        # through a CTE grouped by the joined column
        (
            "WITH p AS (SELECT order_id, sum(amount) AS paid FROM s.pay GROUP BY order_id) "
            f"SELECT o.id, p.paid {ORDERS} LEFT JOIN p ON p.order_id = o.id",
            ["id"],
            {"s.pay": {"id": "order_id"}},
        ),
        # the driving key read through a CTE of the driving input
        (
            "WITH d AS (SELECT id, cid FROM s.orders) "
            "SELECT d.id, d.cid, u.name FROM d LEFT JOIN s.users u ON u.cid = d.cid",
            ["id", "cid"],
            {"s.users": {"cid": "cid"}},
        ),
        # on a driving column that is no key: through the driving rows holding its values
        (
            f"SELECT o.id, u.name {ORDERS} LEFT JOIN s.users u ON u.cid = o.cid",
            ["id"],
            {"s.users": {"cid": "cid"}},
        ),
        (
            "WITH d AS (SELECT id, cid AS customer FROM s.orders) "
            "SELECT d.id, u.name FROM d JOIN s.users u ON u.cid = d.customer",
            ["id"],
            {"s.users": {"cid": "cid"}},
        ),
        # on two keys at once
        (
            f"SELECT o.id, o.cid, x.v {ORDERS} JOIN s.x x ON x.a = o.id AND x.b = o.cid",
            ["id", "cid"],
            {"s.x": {"id": "a", "cid": "b"}},
        ),
    ],
)
def test_an_input_joined_on_a_key_is_keyed(sql, keys, expected):
    assert keyed(sql, keys) == expected


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        (
            f"SELECT o.id, u.name {ORDERS} LEFT JOIN s.users u ON u.cid = o.cid + 1",
            "on a value computed from the driving row, not a copy of its column",
        ),
        (
            "WITH d AS (SELECT id, max(cid) OVER (PARTITION BY id) AS cid FROM s.orders) "
            "SELECT d.id, u.name FROM d LEFT JOIN s.users u ON u.cid = d.cid",
            "on a value aggregated over the key's rows, not a copy of a column",
        ),
        (f"SELECT o.id, u.name {ORDERS} LEFT JOIN s.users u ON oid = o.id", "unqualified"),
        (f"SELECT o.id, u.name {ORDERS} LEFT JOIN s.users u ON u.oid >= o.id", "no equality"),
        (
            f"SELECT o.id, u.name {ORDERS} LEFT JOIN s.users u ON u.oid = o.id "
            "WHERE o.id IN (SELECT oid FROM s.users)",
            "read again in a subquery",
        ),
        (
            f"SELECT o.id, u.name, v.name AS n2 {ORDERS} LEFT JOIN s.users u ON u.oid = o.id "
            "LEFT JOIN s.users v ON v.name = o.note",
            "read again not on a key",
        ),
        (
            "WITH p AS (SELECT order_id, sum(amount) OVER () AS total FROM s.pay) "
            f"SELECT o.id, p.total {ORDERS} LEFT JOIN p ON p.order_id = o.id",
            "a CTE that mixes every row of it",
        ),
        (
            "WITH p AS (SELECT order_id + 1 AS order_id, amount FROM s.pay) "
            f"SELECT o.id, p.amount {ORDERS} LEFT JOIN p ON p.order_id = o.id",
            "a CTE whose joined column is computed, no copy of the input's",
        ),
    ],
)
def test_an_input_not_provably_joined_on_a_key_is_not_keyed(sql, why):
    assert keyed(sql, ["id"]) == {}, why


def test_a_cte_joined_on_a_column_it_groups_by_keys_by_that_column():
    """Rows of the CTE with one value of its joined column come only from rows of the input
    with that value of the column it copies, whatever its name."""
    sql = (
        "WITH p AS (SELECT region AS order_id, count(*) AS n FROM s.pay GROUP BY region) "
        f"SELECT o.id, p.n {ORDERS} LEFT JOIN p ON p.order_id = o.id"
    )
    assert keyed(sql, ["id"]) == {"s.pay": {"id": "region"}}


def test_an_input_in_from_with_the_driving_joined_to_it_is_not_keyed():
    sql = "SELECT o.id, u.name FROM s.users u JOIN s.orders o ON o.id = u.oid"
    assert keyed(sql, ["id"]) == {}


def test_the_demo_tables_say_which_inputs_are_keyed(demo_catalog):
    found = {
        name: {table: dict(pairs) for table, pairs in dataset.incremental.keyed}
        for name, dataset in demo_catalog.datasets.items()
        if dataset.incremental is not None and dataset.settings.kind == "merge"
    }
    # payments on the key; the clickstream, the users and their addresses on the order's
    # customer (a driving column, no key)
    assert found["gold.fraud_features"] == {
        "silver.payments": {"order_id": "order_id"},
        "silver.user_events": {"customer_id": "customer_id"},
        "silver.users_masked": {"customer_id": "customer_id"},
        "silver.addresses_validated": {"customer_id": "customer_id"},
    }
    # the fx rates on the order's currency and day
    assert found["silver.orders_usd"] == {
        "bronze.fx_rates": {"currency": "currency", "order_date": "rate_date"}
    }
