"""Incremental kinds decided from the SQL: append and merge are accepted only when a run over
the driving input's new (or changed-key) rows gives what a full rebuild would, else refused with
a reason that says what to change and the line of the construct at fault. Real SQL throughout:
the demo's silver and gold files, TPC-H / TPC-DS queries (copied below), and small cases."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from medallion_assets.lineage.columns import Schema
from medallion_assets.lineage.incremental import (
    Incremental,
    NotIncremental,
    incremental,
    possible_kinds,
)
from medallion_assets.lineage.statement import Statement, parse_script

SQL = Path(__file__).resolve().parents[2] / "sql"

# TPC-H and TPC-DS queries of the repository's corpus (tests/data/corpora).
CORPORA = Path(__file__).resolve().parents[1] / "data" / "corpora"
TPCH_Q1 = (CORPORA / "tpch/tpch_q01.sql").read_text()
TPCH_Q3 = (CORPORA / "tpch/tpch_q03.sql").read_text()
TPCH_Q6 = (CORPORA / "tpch/tpch_q06.sql").read_text()
TPCH_Q18 = (CORPORA / "tpch/tpch_q18.sql").read_text()
TPCDS_Q71 = (CORPORA / "tpcds/tpcds_q71.sql").read_text()
TPCDS_Q87 = (CORPORA / "tpcds/tpcds_q87.sql").read_text()


def parse(sql: str, dialect: str = "spark", target: str = "silver.t") -> Statement:
    return parse_script(sql, dialect, target)[1]


def demo(name: str) -> tuple[str, Statement]:
    """A demo table's SQL text and statement (``name``: layer.table)."""
    layer, table = name.split(".")
    text = (SQL / layer / f"{table}.sql").read_text()
    return text, parse(text, target=name)


def line(sql: str, fragment: str) -> int:
    """The 1-based line of ``sql`` where ``fragment`` first appears."""
    return sql[: sql.index(fragment)].count("\n") + 1


def refusal(
    statement: Statement,
    kind: str,
    keys: Sequence[str] = (),
    driving: str | None = None,
    schema: Schema | None = None,
) -> NotIncremental:
    """The refusal of ``kind``; the test fails when the kind is accepted."""
    with pytest.raises(NotIncremental) as caught:
        incremental(statement, kind, keys, driving, schema or {})
    return caught.value


# --- the demo -------------------------------------------------------------------------------


def test_orders_usd_merges_on_order_id_driven_by_bronze_orders():
    _, statement = demo("silver.orders_usd")
    found = incremental(statement, "merge", ["order_id"], "bronze.orders")
    # the fx rates joined on the order's currency and day: a changed rate recomputes its orders
    fx = (("bronze.fx_rates", (("currency", "currency"), ("order_date", "rate_date"))),)
    assert found == Incremental("merge", "bronze.orders", (("order_id", "order_id"),), fx)
    # Unnamed, the driving input is the one the key copies from.
    assert incremental(statement, "merge", ["order_id"]) == found


def test_orders_usd_cannot_append_because_its_window_keeps_the_latest_version():
    text, statement = demo("silver.orders_usd")
    error = refusal(statement, "append", driving="bronze.orders")
    assert error.line == line(text, "row_number() OVER (PARTITION BY order_id")
    assert error.reason == (
        "kind append: the driving input bronze.orders is read through a window function "
        f"(row_number on line {error.line}), so new rows would change rows already written: "
        "use kind merge with keys its PARTITION BY holds, or kind full"
    )


# What `catalog show` suggests for each demo table, read off its SQL.
DEMO_KINDS = {
    # The latest row per id by row_number() OVER (PARTITION BY id): merge on that id only.
    "silver.addresses_validated": ["merge on customer_id"],
    "silver.customers_clean": ["merge on customer_id"],
    # Row by row: every export of a customer (datasets.yaml keeps its versions, kind scd2).
    "silver.customers_history": ["append", "merge on customer_id"],
    "silver.orders_usd": ["merge on order_id"],  # bronze.fx_rates is a LEFT JOINed lookup
    "silver.payments": ["merge on payment_id"],
    "silver.products": ["merge on product_id"],
    "silver.shipments": ["merge on shipment_id"],
    "silver.user_events": ["merge on event_id"],
    # Both of its windows are partitioned by order_id; silver.products is a LEFT JOINed lookup.
    "silver.order_items": ["merge on order_id"],
    # Row by row over silver.customers_clean: hashing and masking values is no aggregation.
    "silver.users_masked": ["append", "merge on customer_id"],
    # Users LEFT JOIN orders, grouped by user columns: driven by users, merged per group.
    "gold.customer_ltv": [
        "merge on customer_id, email_sha256, country_code, signup_date, marketing_opt_in"
    ],
    "gold.daily_user_events": ["merge on event_date, event_type, device_type, country_code"],
    # Orders read twice (the orders CTE, and again in recent_activity, grouped by order and
    # joined back on it); the rest LEFT JOINed.
    "gold.fraud_features": ["merge on order_id"],
    # A filter over one table; `SELECT *` of a table of unknown schema lists no key.
    "gold.late_shipments": ["append"],
    # Grouped by a day of one input and a product of the other: no key from one input alone.
    "gold.product_sales": [],
    "gold.revenue_by_region": [],  # grouped by computed columns (region, country_code)
    "gold.shipping_dashboard_feed": [],  # is_late reads current_date()
}


def test_the_verdict_table_covers_every_demo_table():
    files = {
        f"{p.parent.name}.{p.stem}"
        for layer in ("silver", "gold")
        for p in (SQL / layer).glob("*.sql")
    }
    assert files == set(DEMO_KINDS)


@pytest.mark.parametrize("table", sorted(DEMO_KINDS))
def test_each_demo_table_is_offered_the_kinds_its_sql_allows(table):
    _, statement = demo(table)
    assert possible_kinds(statement, {}) == DEMO_KINDS[table]


@pytest.mark.parametrize(
    ("table", "kind", "keys", "driving", "expected"),
    [
        ("silver.users_masked", "append", (), None, ()),
        ("silver.order_items", "merge", ("order_id",), None, (("order_id", "order_id"),)),
        # The GROUP BY holds i.product_id; silver.orders_usd is read whole as a lookup.
        (
            "gold.product_sales",
            "merge",
            ("product_id",),
            "silver.order_items",
            (("product_id", "product_id"),),
        ),
        # Through `SELECT *` of a table whose columns are unknown: the column of that name.
        ("gold.late_shipments", "merge", ("shipment_id",), None, (("shipment_id", "shipment_id"),)),
        (
            "gold.daily_user_events",
            "merge",
            ("event_date", "event_type", "device_type", "country_code"),
            None,
            (
                ("event_date", "event_date"),
                ("event_type", "event_type"),
                ("device_type", "device_type"),
                ("country_code", "country_code"),
            ),
        ),
    ],
)
def test_demo_tables_accept_the_kinds_their_sql_allows(table, kind, keys, driving, expected):
    _, statement = demo(table)
    found = incremental(statement, kind, keys, driving)
    assert found.kind == kind and found.keys == expected
    assert found.driving in statement.sources


@pytest.mark.parametrize(
    ("table", "kind", "keys", "driving", "says", "at"),
    [
        (
            "silver.orders_usd",
            "append",
            (),
            "bronze.fx_rates",
            "bronze.fx_rates is on the optional side of a LEFT JOIN",
            "LEFT JOIN bronze.fx_rates",
        ),
        (
            "silver.orders_usd",
            "merge",
            ("order_id", "customer_id"),
            None,
            "the PARTITION BY of row_number on line 14 does not hold the key customer_id "
            "(a copy of bronze.orders.customer_id)",
            "row_number()",
        ),
        (
            "silver.order_items",
            "append",
            (),
            "bronze.orders",
            "is read through a window function (row_number",
            "row_number() OVER (PARTITION BY order_id",
        ),
        (
            "silver.order_items",
            "merge",
            ("sku",),
            "bronze.orders",
            "no key copies a column of the driving input bronze.orders (key sku copies "
            "silver.products.sku)",
            "p.sku",
        ),
        (
            "silver.order_items",
            "append",
            (),
            "silver.products",
            "silver.products is on the optional side of a LEFT JOIN",
            "LEFT JOIN silver.products",
        ),
        (
            "gold.customer_ltv",
            "append",
            (),
            "silver.users_masked",
            "silver.users_masked is aggregated (GROUP BY",
            "GROUP BY customer_id",
        ),
        (
            "gold.customer_ltv",
            "append",
            (),
            "silver.orders_usd",
            "on the optional side of a LEFT JOIN",
            "LEFT JOIN silver.orders_usd",
        ),
        (
            "gold.fraud_features",
            "merge",
            ("customer_id",),
            "silver.orders_usd",
            "silver.orders_usd is read more than once (again",
            "LEFT JOIN recent_activity",
        ),
        (
            "gold.fraud_features",
            "append",
            (),
            "silver.user_events",
            "on the optional side of a LEFT JOIN",
            "LEFT JOIN recent_activity",
        ),
        (
            "gold.fraud_features",
            "append",
            (),
            "silver.payments",
            "on the optional side of a LEFT JOIN",
            "LEFT JOIN payment_attempts",
        ),
        (
            "gold.product_sales",
            "merge",
            ("order_date",),
            "silver.order_items",
            "no key copies a column of the driving input silver.order_items (key order_date "
            "copies silver.orders_usd.order_date)",
            "o.order_date,",
        ),
        (
            "gold.product_sales",
            "append",
            (),
            "silver.orders_usd",
            "aggregated (GROUP BY",
            "GROUP BY o.order_date",
        ),
        (
            "gold.revenue_by_region",
            "merge",
            ("region",),
            "silver.orders_usd",
            "key region is computed from silver.orders_usd.ship_to_country, "
            "silver.users_masked.country_code (expression, in a CTE or subquery)",
            "    region,\n",
        ),
        (
            "gold.daily_user_events",
            "append",
            (),
            None,
            "aggregated (GROUP BY",
            "GROUP BY event_date",
        ),
        (
            "gold.shipping_dashboard_feed",
            "append",
            (),
            "silver.shipments",
            "rows of the driving input silver.shipments depend on the clock (current_date",
            "current_date()",
        ),
    ],
)
def test_demo_tables_refuse_what_their_sql_forbids(table, kind, keys, driving, says, at):
    text, statement = demo(table)
    error = refusal(statement, kind, keys, driving)
    assert says in error.reason
    assert error.line == line(text, at)
    assert error.reason.startswith(f"kind {kind}: ")


# --- which files may be incremental ---------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        (
            "MERGE INTO silver.t USING bronze.orders AS s ON t.id = s.id WHEN MATCHED THEN "
            "UPDATE SET *",
            "a MERGE INTO file already says how it changes the table; remove kind",
        ),
        (
            "INSERT INTO silver.t SELECT id FROM bronze.orders",
            "an INSERT INTO file already appends",
        ),
        (
            "INSERT OVERWRITE TABLE silver.t SELECT id FROM bronze.orders",
            "an INSERT OVERWRITE file",
        ),
        ("UPDATE silver.t SET amount = 0 WHERE id = 1", "an UPDATE file already says how"),
        ("CREATE VIEW silver.t AS SELECT id FROM bronze.orders", "a view is computed when read"),
        ("SELECT 1 AS id", "the query reads no table"),
    ],
)
def test_files_that_say_how_they_write_or_read_nothing_refuse_any_kind(sql, says):
    statement = parse(sql)
    for kind in ("append", "merge"):
        assert says in refusal(statement, kind, ["id"] if kind == "merge" else ()).reason
    assert possible_kinds(statement, {}) == []


def test_create_table_as_select_is_a_query_like_a_bare_select():
    statement = parse("CREATE TABLE silver.t AS SELECT id, amount FROM bronze.orders")
    assert statement.kind == "create_table"
    assert incremental(statement, "append") == Incremental("append", "bronze.orders")


def test_a_kind_other_than_append_or_merge_is_not_checked():
    statement = parse("SELECT id FROM bronze.orders")
    assert "not an incremental kind" in refusal(statement, "full").reason


# --- the driving input ----------------------------------------------------------------------

JOINED = (
    "SELECT o.id, o.amount, c.name "
    "FROM bronze.orders AS o JOIN bronze.customers AS c ON c.id = o.cid"
)


def test_the_only_input_drives_when_none_is_named():
    assert incremental(parse("SELECT id FROM bronze.orders"), "append").driving == "bronze.orders"


def test_two_inputs_need_the_driving_one_named():
    statement = parse(JOINED)
    error = refusal(statement, "append")
    assert error.reason == (
        "kind append: name the driving input: driving: one of bronze.customers, bronze.orders"
    )
    assert error.line is None
    # An inner join: either side may drive; the other is read whole.
    assert (
        incremental(statement, "append", driving="bronze.customers").driving == "bronze.customers"
    )


def test_a_driving_input_must_be_one_the_query_reads():
    error = refusal(parse(JOINED), "append", driving="bronze.order")
    assert error.reason == (
        "kind append: driving bronze.order is not an input of it (bronze.customers, bronze.orders)"
    )


def test_merge_keys_name_the_driving_input_they_copy_from():
    assert incremental(parse(JOINED), "merge", ["id"]).driving == "bronze.orders"
    assert incremental(parse(JOINED), "merge", ["name"]).driving == "bronze.customers"
    error = refusal(parse(JOINED), "merge", ["id", "name"])
    assert "name the driving input: driving: one of bronze.customers, bronze.orders" in error.reason


def test_an_input_only_an_unused_cte_reads_does_not_drive():
    sql = "WITH unused AS (SELECT * FROM bronze.orders) SELECT c.id FROM bronze.customers AS c"
    error = refusal(parse(sql), "append", driving="bronze.orders")
    assert "the query's rows do not depend on the driving input bronze.orders" in error.reason
    assert incremental(parse(sql), "append", driving="bronze.customers")


# --- merge keys ------------------------------------------------------------------------------


def test_merge_needs_keys_and_append_takes_none():
    statement = parse("SELECT id FROM bronze.orders")
    assert "kind merge needs keys" in refusal(statement, "merge").reason
    assert "keys apply to kind merge only" in refusal(statement, "append", ["id"]).reason


def test_multi_column_keys_map_each_output_to_its_driving_column():
    sql = """
        SELECT o.order_id AS id, o.line_no AS line, max(o.qty) AS qty
        FROM bronze.order_lines AS o
        GROUP BY o.order_id, o.line_no
    """
    found = incremental(parse(sql), "merge", ["ID", "line"])
    assert found.keys == (("id", "order_id"), ("line", "line_no"))
    error = refusal(parse(sql.replace(", o.line_no\n", "\n")), "merge", ["id", "line"])
    assert (
        "the GROUP BY on line 4 does not hold the key line (a copy of bronze.order_lines.line_no)"
        in error.reason
    )


def test_a_key_that_is_an_expression_is_refused_naming_it():
    text, statement = demo("silver.orders_usd")
    error = refusal(statement, "merge", ["total_amount_usd"])
    assert error.reason.startswith("kind merge: key total_amount_usd is CAST(o.total_amount * ")
    assert "not a plain copy of one column" in error.reason
    # CAST keeps no position: the first line of the expression that does.
    assert error.line == line(text, "o.total_amount * CASE")


def test_a_key_copied_from_a_dimension_is_refused_naming_its_table():
    sql = "SELECT o.id, p.sku FROM bronze.orders AS o JOIN silver.products AS p ON p.id = o.pid"
    error = refusal(parse(sql), "merge", ["sku"], "bronze.orders")
    assert error.reason == (
        "kind merge: no key copies a column of the driving input bronze.orders (key sku copies "
        "silver.products.sku): add a key copied from bronze.orders, or name another driving"
    )


def test_keys_the_sql_computes_only_tell_apart_the_rows_of_a_driving_key():
    """silver.order_items: an order's lines, numbered by row_number over the order: the order
    id selects the driving rows, the line number (computed) tells the order's rows apart."""
    _, statement = demo("silver.order_items")
    found = incremental(statement, "merge", ["order_id", "line_number"])
    assert found == Incremental("merge", "bronze.orders", (("order_id", "order_id"),))
    # A dimension's column beside the driving key is kept out of the driving keys too.
    sql = "SELECT o.id, p.sku FROM bronze.orders AS o JOIN silver.products AS p ON p.id = o.pid"
    assert incremental(parse(sql), "merge", ["id", "sku"], "bronze.orders").keys == (("id", "id"),)
    # A key that is no output column at all is still refused.
    error = refusal(statement, "merge", ["order_id", "no_such"])
    assert "key no_such is not an output column" in error.reason


def test_an_unqualified_key_is_the_column_of_the_input_whose_schema_has_it():
    sql = "SELECT order_id, name FROM bronze.orders JOIN bronze.customers ON id = customer_id"
    schema = {"bronze.orders": {"order_id": "bigint", "customer_id": "bigint"}}
    found = incremental(parse(sql), "merge", ["order_id"], schema=schema)
    assert found == Incremental("merge", "bronze.orders", (("order_id", "order_id"),))
    # Without schemas, either input may have the column: no key can be told.
    error = refusal(parse(sql), "merge", ["order_id"])
    assert "key order_id cannot be followed to the column it copies (order_id: ambiguous" in (
        error.reason
    )


def test_a_key_that_is_no_output_column_lists_the_columns():
    error = refusal(parse("SELECT id, amount FROM bronze.orders"), "merge", ["order_id"])
    assert "key order_id is not an output column of the query (id, amount)" in error.reason


@pytest.mark.parametrize(
    "sql",
    [
        # Renamed by a CTE's column list, then by a derived table's.
        "WITH c (k, v) AS (SELECT id, amount FROM bronze.orders) SELECT d.kk AS key FROM (SELECT "
        "k FROM c) AS d (kk)",
        # Through a star over a derived table, and an alias of the outer query.
        "SELECT x.id AS key FROM (SELECT * FROM (SELECT id, amount FROM bronze.orders) AS i) AS x",
        # Both UNION ALL branches copy the same column at the key's position.
        "SELECT id AS key FROM bronze.orders WHERE amount > 0 UNION ALL SELECT id FROM "
        "bronze.orders WHERE amount < 0",
    ],
)
def test_a_key_is_followed_through_ctes_derived_tables_and_union_branches(sql):
    assert incremental(parse(sql), "merge", ["key"]).keys == (("key", "id"),)


def test_a_union_by_name_matches_columns_by_name_not_position():
    sql = (
        "SELECT id AS key, id AS other FROM bronze.orders "
        "UNION ALL BY NAME SELECT id AS other, cid AS key FROM bronze.orders"
    )
    error = refusal(parse(sql, dialect="duckdb"), "merge", ["key"])
    assert "key key is not the same plain copy of one column" in error.reason


def test_a_key_is_only_a_column_the_known_schema_lists():
    sql = "SELECT o.* FROM bronze.orders AS o JOIN bronze.customers AS c ON c.id = o.cid"
    schema = {"bronze.orders": {"id": "bigint", "cid": "bigint"}}
    error = refusal(parse(sql), "merge", ["name"], "bronze.orders", schema)
    assert "key name is not an output column of the query (id, cid)" in error.reason
    assert incremental(parse(sql), "merge", ["id"], schema=schema).keys == (("id", "id"),)


def test_a_star_in_a_union_branch_hides_which_column_is_at_the_keys_position():
    # The second branch's star yields id, amount, cid: amount, not cid, is at the key's position.
    sql = (
        "SELECT id, cid AS key, amount, cid AS again FROM bronze.orders UNION ALL "
        "SELECT *, cid FROM (SELECT id, amount, cid FROM bronze.orders) AS x"
    )
    assert refusal(parse(sql), "merge", ["key"]).reason.startswith("kind merge: key key ")


def test_a_field_of_a_struct_column_is_no_copy_of_a_table_column():
    # c.o.id: the field id of the column o of c, not the column id of the table aliased o.
    sql = "SELECT c.o.id AS key FROM bronze.orders AS o JOIN bronze.customers AS c ON c.id = o.cid"
    error = refusal(parse(sql), "merge", ["key"], "bronze.orders")
    assert error.reason.startswith("kind merge: key key ")


def test_a_key_two_union_branches_take_from_different_columns_is_refused():
    sql = "SELECT id AS key FROM bronze.orders UNION ALL SELECT parent_id FROM bronze.orders"
    error = refusal(parse(sql), "merge", ["key"])
    assert "key key is not the same plain copy of one column" in error.reason
    assert "bronze.orders.id, bronze.orders.parent_id" in error.reason


# --- what the query does to the driving rows --------------------------------------------------

# Each refused for append with bronze.orders driving; ``says`` is the heart of the reason.
APPEND_REFUSED = [
    (
        "SELECT cid, sum(amount) AS total FROM bronze.orders GROUP BY cid",
        "is aggregated (GROUP BY on line 1), so new rows would change rows already written",
    ),
    (
        "SELECT sum(amount) AS total FROM bronze.orders",
        "is aggregated into one row (sum on line 1), so every new row changes it: use kind full",
    ),
    (
        # an aggregate sqlglot does not model
        "SELECT id, every(paid) AS all_paid FROM bronze.orders",
        "is aggregated into one row (every on line 1)",
    ),
    (
        "SELECT id, rank() OVER (PARTITION BY cid ORDER BY ts) AS r FROM bronze.orders",
        "is read through a window function (rank on line 1)",
    ),
    (
        "SELECT DISTINCT cid FROM bronze.orders",
        "goes through SELECT DISTINCT on line 1, so a new row may repeat a row already written",
    ),
    ("SELECT id FROM bronze.orders ORDER BY ts LIMIT 10", "goes through LIMIT on line 1"),
    ("SELECT id FROM bronze.orders ORDER BY ts OFFSET 10", "goes through LIMIT on line 1"),
    (
        "SELECT id FROM bronze.orders UNION SELECT id FROM bronze.orders_archive",
        "goes through UNION (its branch on line 1), whose result depends on all of its rows",
    ),
    (
        "SELECT id FROM bronze.orders INTERSECT SELECT id FROM bronze.customers",
        "goes through INTERSECT",
    ),
    ("SELECT id FROM bronze.orders EXCEPT SELECT id FROM bronze.refunds", "goes through EXCEPT"),
    (
        "SELECT a.id FROM bronze.orders AS a JOIN bronze.orders AS b ON b.id = a.parent_id",
        "is read more than once (again on line 1), so new rows would pair with rows already "
        "written",
    ),
    (
        "SELECT o.id FROM bronze.orders AS o WHERE o.amount > (SELECT avg(amount) FROM "
        "bronze.orders)",
        "is read inside a subquery on line 1, so other rows depend on the whole set of its rows",
    ),
    (
        "SELECT c.id FROM bronze.customers AS c LEFT JOIN bronze.orders AS o ON o.cid = c.id",
        "is on the optional side of a LEFT JOIN on line 1, so rows written without a match would "
        "change when its rows arrive: read it first (FROM bronze.orders ... LEFT JOIN ...)",
    ),
    (
        "SELECT o.id FROM bronze.orders AS o RIGHT JOIN bronze.customers AS c ON o.cid = c.id",
        "is on the optional side of a RIGHT JOIN",
    ),
    (
        "SELECT o.id FROM bronze.orders AS o FULL OUTER JOIN bronze.customers AS c ON o.cid = c.id",
        "is on the optional side of a FULL OUTER JOIN",
    ),
    (
        "SELECT o.id FROM bronze.customers AS c JOIN bronze.orders AS o ON o.cid = c.id "
        "RIGHT JOIN bronze.regions AS r ON r.id = c.rid",
        "is on the optional side of a RIGHT JOIN",
    ),
    (
        "SELECT o.id FROM bronze.orders AS o LEFT JOIN bronze.customers AS c ON o.cid = c.id "
        "RIGHT JOIN bronze.regions AS r ON r.id = c.rid",
        "is on the optional side of a RIGHT JOIN",
    ),
    (
        "SELECT x.id FROM bronze.customers AS c LEFT JOIN (SELECT id, cid FROM bronze.orders) AS "
        "x ON x.cid = c.id",
        "is on the optional side of a LEFT JOIN",
    ),
    (
        "SELECT c.id FROM bronze.customers AS c LEFT SEMI JOIN bronze.orders AS o ON o.cid = c.id",
        "is the filtering side of a LEFT SEMI JOIN",
    ),
    (
        "SELECT c.id FROM bronze.customers AS c WHERE c.id IN (SELECT cid FROM bronze.orders)",
        "is read inside a subquery",
    ),
    (
        "SELECT c.id FROM bronze.customers AS c WHERE EXISTS (SELECT 1 FROM bronze.orders AS o "
        "WHERE o.cid = c.id)",
        "is read inside a subquery",
    ),
    (
        "SELECT c.id, (SELECT count(*) FROM bronze.orders AS o WHERE o.cid = c.id) AS n FROM "
        "bronze.customers AS c",
        "is read inside a subquery",
    ),
    (
        "WITH big AS (SELECT cid FROM bronze.orders WHERE amount > 100) "
        "SELECT c.id FROM bronze.customers AS c WHERE c.id IN (SELECT cid FROM big)",
        "is read inside a subquery",
    ),
    (
        "SELECT c.id FROM bronze.customers AS c, LATERAL (SELECT max(amount) AS m FROM "
        "bronze.orders AS o WHERE o.cid = c.id) AS l",
        "is read inside a LATERAL call",
    ),
    (
        "SELECT * FROM (bronze.customers AS c JOIN bronze.orders AS o ON o.cid = c.id)",
        "is inside a parenthesised join",
    ),
    (
        "SELECT * FROM explode((SELECT collect_list(amount) FROM bronze.orders))",
        "is read where this check cannot follow it on line 1",
    ),
    (
        "WITH RECURSIVE chain AS (SELECT id, parent_id FROM bronze.orders UNION ALL "
        "SELECT c.id, o.parent_id FROM chain AS c JOIN bronze.tree AS o ON o.id = c.parent_id) "
        "SELECT * FROM chain",
        "is read by the recursive CTE chain",
    ),
    (
        "SELECT id, x FROM bronze.orders PIVOT (sum(amount) FOR status IN ('paid', 'open'))",
        "is read with PIVOT",
    ),
    (
        "SELECT id, amount FROM bronze.orders WHERE ts > current_timestamp() - INTERVAL 1 DAY",
        "depend on the clock (current_timestamp on line 1)",
    ),
    (
        "SELECT id FROM bronze.orders UNION ALL SELECT id FROM bronze.orders_archive",
        "the UNION ALL branch on line 1 does not read the driving input bronze.orders, so its rows "
        "would be written again on every run",
    ),
]


@pytest.mark.parametrize(("sql", "says"), APPEND_REFUSED)
def test_append_refuses_what_makes_new_rows_change_rows_already_written(sql, says):
    error = refusal(parse(sql), "append", driving="bronze.orders")
    assert error.reason.startswith("kind append: ")
    assert says in error.reason
    assert error.line == 1


def test_tsql_top_is_a_limit():
    statement = parse("SELECT TOP 5 id FROM bronze.orders", dialect="tsql")
    assert "goes through LIMIT" in refusal(statement, "append").reason


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, amount * 2 AS doubled FROM bronze.orders WHERE amount > 0",
        # Lookups joined inner or LEFT JOINed on its right; a filter by a lookup's subquery.
        "SELECT o.id, c.name, r.region FROM bronze.orders AS o JOIN bronze.customers AS c ON "
        "c.id = o.cid "
        "LEFT JOIN bronze.regions AS r ON r.id = c.rid WHERE o.cid IN (SELECT id FROM bronze.vips)",
        "SELECT o.id FROM bronze.customers AS c RIGHT JOIN bronze.orders AS o ON o.cid = c.id",
        "SELECT o.id FROM bronze.orders AS o LEFT ANTI JOIN bronze.refunds AS r ON r.id = o.id",
        "SELECT o.id FROM bronze.orders AS o WHERE EXISTS (SELECT 1 FROM bronze.customers AS c "
        "WHERE c.id = o.cid)",
        # Aggregates and windows over the lookups only.
        "SELECT o.id, t.total FROM bronze.orders AS o JOIN (SELECT cid, sum(x) AS total FROM "
        "bronze.credit GROUP BY cid) AS t ON t.cid = o.cid",
        "SELECT o.id, item FROM bronze.orders AS o LATERAL VIEW explode(o.items) e AS item",
        "WITH paid AS (SELECT * FROM bronze.orders WHERE paid) SELECT id FROM paid ORDER BY id",
        # Each UNION ALL branch reads the driving input once: new rows add rows to each branch.
        "SELECT id, 'web' AS channel FROM bronze.orders WHERE web UNION ALL "
        "SELECT id, 'shop' FROM bronze.orders WHERE NOT web",
        "WITH o AS (SELECT id, web FROM bronze.orders) SELECT id FROM o WHERE web UNION ALL "
        "SELECT id FROM o WHERE NOT web",
    ],
)
def test_append_accepts_rows_made_one_driving_row_at_a_time(sql):
    assert incremental(parse(sql), "append", driving="bronze.orders") == Incremental(
        "append", "bronze.orders"
    )


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, count(*) AS n FROM bronze.orders GROUP BY id",
        "SELECT id, count(*) AS n FROM bronze.orders GROUP BY 1",
        "SELECT id, max(amount) AS m FROM bronze.orders GROUP BY id, cid HAVING count(*) > 1",
        "SELECT id, amount FROM bronze.orders QUALIFY row_number() OVER (PARTITION BY id ORDER "
        "BY ts DESC) = 1",
        "SELECT id, sum(amount) OVER w AS running FROM bronze.orders WINDOW w AS (PARTITION BY "
        "id ORDER BY ts)",
        "SELECT DISTINCT id, status FROM bronze.orders",
        "SELECT id, k FROM (SELECT id AS k, id FROM bronze.orders) AS d GROUP BY id, k",
        "SELECT k AS id FROM (SELECT id AS k FROM bronze.orders UNION ALL SELECT id FROM "
        "bronze.orders) AS u GROUP BY k",
    ],
)
def test_merge_accepts_grouping_windows_and_distinct_that_hold_the_key(sql):
    assert incremental(parse(sql), "merge", ["id"]).keys == (("id", "id"),)


def test_merge_resolves_a_group_by_alias_when_the_schema_shows_no_column_of_that_name():
    sql = "SELECT id AS order_id, count(*) AS n FROM bronze.orders GROUP BY order_id"
    schema = {"bronze.orders": {"id": "bigint", "amount": "decimal(18,2)"}}
    assert incremental(parse(sql), "merge", ["order_id"], schema=schema).keys == (
        ("order_id", "id"),
    )
    # Without the schema, `order_id` may be a column of bronze.orders that Spark groups by.
    assert "does not hold the key order_id" in refusal(parse(sql), "merge", ["order_id"]).reason


MERGE_REFUSED = [
    ("SELECT id, count(*) AS n FROM bronze.orders GROUP BY status, id, cid HAVING n > 1", None),
    (
        "SELECT id, s FROM (SELECT id, cid, sum(amount) AS s FROM bronze.orders GROUP BY cid, "
        "id) AS g "
        "JOIN (SELECT cid FROM bronze.vips GROUP BY cid) AS v ON v.cid = g.cid",
        None,
    ),
    (
        "SELECT id, n FROM (SELECT id, count(*) OVER (PARTITION BY cid) AS n FROM bronze.orders) "
        "AS w",
        "the PARTITION BY of count on line 1 does not hold the key id (a copy of "
        "bronze.orders.id), "
        "so it mixes rows of several keys: add id to it, or choose keys it holds",
    ),
    (
        "SELECT id, count(*) OVER () AS n FROM bronze.orders",
        "the PARTITION BY of count on line 1 does not hold the key id",
    ),
    (
        "SELECT id, sum(amount) OVER w AS s FROM bronze.orders WINDOW w AS (PARTITION BY cid)",
        "the PARTITION BY of sum on line 1 does not hold the key id",
    ),
    (
        "SELECT id, s FROM (SELECT max(id) AS id, sum(amount) AS s FROM bronze.orders GROUP BY "
        "cid) AS g",
        "key id is computed from bronze.orders.id (aggregate, in a CTE or subquery)",
    ),
    ("SELECT max(id) AS id FROM bronze.orders", "is aggregated into one row (max on line 1)"),
    (
        "SELECT id, sum(amount) AS s FROM bronze.orders GROUP BY ROLLUP (id, cid)",
        "the GROUP BY on line 1 uses ALL, ROLLUP, CUBE or GROUPING SETS",
    ),
    (  # joined again, but not on the key: an order meets another order's rows
        "SELECT a.id FROM bronze.orders AS a JOIN bronze.orders AS b ON b.id = a.parent_id",
        "bronze.orders is read more than once (again on line 1)",
    ),
    ("SELECT id FROM bronze.orders LIMIT 100", "goes through LIMIT on line 1"),
    ("SELECT id FROM bronze.orders UNION SELECT id FROM bronze.orders", "goes through UNION"),
    (
        "SELECT id FROM bronze.orders UNION ALL SELECT 0",
        "the UNION ALL branch on line 1 does not read",
    ),
]


@pytest.mark.parametrize(("sql", "says"), MERGE_REFUSED)
def test_merge_refuses_what_mixes_rows_of_several_keys(sql, says):
    if says is None:  # the grouping holds the key: accepted
        assert incremental(parse(sql), "merge", ["id"]).keys == (("id", "id"),)
        return
    error = refusal(parse(sql), "merge", ["id"], "bronze.orders")
    assert error.reason.startswith("kind merge: ")
    assert says in error.reason
    assert error.line == 1


def test_merge_refuses_distinct_on_columns_without_the_key():
    sql = "SELECT DISTINCT ON (status) id, status FROM bronze.orders ORDER BY status, ts DESC"
    error = refusal(parse(sql, dialect="postgres"), "merge", ["id"])
    assert "SELECT DISTINCT on line 1 does not hold the key id" in error.reason
    sql = sql.replace("ON (status)", "ON (id, status)")
    assert incremental(parse(sql, dialect="postgres"), "merge", ["id"]).keys == (("id", "id"),)


# --- lines ----------------------------------------------------------------------------------

MULTI_LINE = """-- Orders per customer, with the customer's name.
WITH paid AS (
    SELECT
        o.order_id,
        o.customer_id,
        o.amount
    FROM bronze.orders AS o
    WHERE o.status = 'paid'
),
per_customer AS (
    SELECT customer_id, sum(amount) AS total
    FROM paid
    GROUP BY customer_id
)
SELECT
    c.name,
    p.customer_id,
    p.total,
    upper(c.name) AS shout
FROM per_customer AS p
LEFT JOIN bronze.customers AS c
    ON c.id = p.customer_id
"""


def test_lines_point_at_the_construct_at_fault_in_a_multi_line_file():
    statement = parse(MULTI_LINE, target="gold.customer_totals")
    grouped = refusal(statement, "append", driving="bronze.orders")
    assert grouped.line == line(MULTI_LINE, "GROUP BY customer_id") == 13
    assert "(GROUP BY on line 13)" in grouped.reason
    joined = refusal(statement, "append", driving="bronze.customers")
    assert joined.line == line(MULTI_LINE, "LEFT JOIN bronze.customers") == 21
    expression = refusal(statement, "merge", ["shout"], "bronze.orders")
    assert expression.line == line(MULTI_LINE, "upper(c.name)") == 19
    dimension = refusal(statement, "merge", ["name"], "bronze.orders")
    assert dimension.line == line(MULTI_LINE, "c.name,") == 16
    assert incremental(statement, "merge", ["customer_id"]).keys == (
        ("customer_id", "customer_id"),
    )


def test_lines_in_a_temporary_view_are_the_files_lines():
    sql = (
        "CREATE TEMPORARY VIEW latest AS\n"
        "SELECT id, max(ts) AS ts\n"
        "FROM bronze.orders\n"
        "GROUP BY id;\n"
        "\n"
        "SELECT l.id, l.ts FROM latest AS l\n"
    )
    error = refusal(parse(sql), "append")
    assert error.line == 4
    assert incremental(parse(sql), "merge", ["id"]).keys == (("id", "id"),)


# --- TPC-H and TPC-DS -----------------------------------------------------------------------


def columns(names: str) -> dict[str, str]:
    return {name: "string" for name in names.split()}


# The TPC-H columns these queries read (TPC-H specification, section 1.4).
TPCH_SCHEMA = {
    "lineitem": columns(
        "l_orderkey l_partkey l_suppkey l_linenumber l_quantity l_extendedprice l_discount l_tax "
        "l_returnflag l_linestatus l_shipdate l_commitdate l_receiptdate l_shipinstruct "
        "l_shipmode l_comment"
    ),
    "orders": columns(
        "o_orderkey o_custkey o_orderstatus o_totalprice o_orderdate o_orderpriority o_clerk "
        "o_shippriority o_comment"
    ),
    "customer": columns(
        "c_custkey c_name c_address c_nationkey c_phone c_acctbal c_mktsegment c_comment"
    ),
}


def tpc(sql: str) -> Statement:
    return parse(sql, dialect="duckdb", target="gold.tpc")


def test_tpch_1_merges_on_both_grouping_columns_and_cannot_append():
    statement = tpc(TPCH_Q1)
    found = incremental(statement, "merge", ["l_returnflag", "l_linestatus"], schema=TPCH_SCHEMA)
    assert found == Incremental(
        "merge", "lineitem", (("l_returnflag", "l_returnflag"), ("l_linestatus", "l_linestatus"))
    )
    assert possible_kinds(statement, TPCH_SCHEMA) == ["merge on l_returnflag, l_linestatus"]
    error = refusal(statement, "append", schema=TPCH_SCHEMA)
    assert "lineitem is aggregated (GROUP BY" in error.reason
    assert error.line == line(TPCH_Q1, "        l_returnflag,\n        l_linestatus\norder")


def test_tpch_6_is_one_row_over_all_line_items():
    error = refusal(tpc(TPCH_Q6), "merge", ["revenue"], schema=TPCH_SCHEMA)
    assert "is aggregated into one row (sum on line 3)" in error.reason
    assert possible_kinds(tpc(TPCH_Q6), TPCH_SCHEMA) == []


def test_tpch_3_keeps_its_top_ten_so_only_full_fits():
    error = refusal(tpc(TPCH_Q3), "merge", ["l_orderkey"], schema=TPCH_SCHEMA)
    assert "lineitem goes through LIMIT" in error.reason
    assert error.line == line(TPCH_Q3, "        10;")
    assert "name the driving input" in refusal(tpc(TPCH_Q3), "append", schema=TPCH_SCHEMA).reason


def test_tpch_18_reads_line_items_again_in_its_in_subquery():
    error = refusal(tpc(TPCH_Q18), "merge", ["o_orderkey"], "lineitem", TPCH_SCHEMA)
    assert "lineitem is read inside a subquery" in error.reason
    # The first line sqlglot positions in it: its first column.
    assert error.line == line(TPCH_Q18, "                        l_orderkey\n")
    # Driven by orders, the subquery is a lookup, but the top 100 still needs every order.
    error = refusal(tpc(TPCH_Q18), "merge", ["o_orderkey"], "orders", TPCH_SCHEMA)
    assert "orders goes through LIMIT" in error.reason


def test_tpcds_71_union_all_branches_of_other_sales_tables_are_rewritten_every_run():
    error = refusal(tpc(TPCDS_Q71), "append", driving="web_sales")
    assert "the UNION ALL branch on line" in error.reason
    assert "does not read the driving input web_sales" in error.reason
    assert error.line == line(TPCDS_Q71, "SELECT cs_ext_sales_price")


def test_tpcds_87_except_depends_on_all_store_sales():
    error = refusal(tpc(TPCDS_Q87), "append", driving="store_sales")
    assert "goes through EXCEPT" in error.reason
    assert possible_kinds(tpc(TPCDS_Q87), {}) == []


# --- the driving input read again, joined back on every key -----------------------------------

JOINED_AGAIN = """
WITH recent AS (
    SELECT o.id, count(e.id) AS clicks
    FROM bronze.orders AS o
    JOIN bronze.events AS e ON e.cid = o.cid AND e.ts <= o.ts
    GROUP BY o.id
)
SELECT o.id, o.amount, coalesce(r.clicks, 0) AS clicks
FROM bronze.orders AS o
LEFT JOIN recent AS r ON r.id = o.id AND r.clicks > 0
"""


def test_a_read_joined_back_on_every_key_merges_on_that_key():
    plan = incremental(parse(JOINED_AGAIN), "merge", ["id"], "bronze.orders")
    # the events joined on the driving cid: a customer's new events recompute its orders
    keyed = (("bronze.events", (("cid", "cid"),)),)
    assert plan == Incremental("merge", "bronze.orders", (("id", "id"),), keyed)
    self_join = parse(
        "SELECT a.id, b.v FROM bronze.orders AS a JOIN bronze.orders AS b ON b.id = a.id"
    )
    assert incremental(self_join, "merge", ["id"]).keys == (("id", "id"),)
    assert possible_kinds(parse(JOINED_AGAIN), {}) == ["merge on id"]


@pytest.mark.parametrize(
    ("change", "kind", "says"),
    [
        (("r.id = o.id AND", "r.id = o.amount AND"), "merge", "is read more than once (again"),
        (("r.id = o.id AND r.clicks > 0", "r.id = o.id OR r.clicks > 0"), "merge", "more than"),
        (("LEFT JOIN recent", "FULL JOIN recent"), "merge", "optional side of a FULL JOIN"),
        (("GROUP BY o.id", "GROUP BY o.cid"), "merge", "GROUP BY on line 6 does not hold the key"),
        (("", ""), "append", "is read more than once (again on line 10)"),
    ],
    ids=["another-column", "or", "full-join", "mixes-keys", "append"],
)
def test_a_read_again_not_on_every_key_or_for_append_is_refused(change, kind, says):
    old, new = change
    keys = ["id"] if kind == "merge" else []
    found = refusal(parse(JOINED_AGAIN.replace(old, new)), kind, keys, "bronze.orders")
    assert says in found.reason, found.reason


def test_every_key_must_be_joined_back():
    sql = (
        JOINED_AGAIN.replace("SELECT o.id, count", "SELECT o.id, o.line, count")
        .replace("GROUP BY o.id", "GROUP BY o.id, o.line")
        .replace("SELECT o.id, o.amount", "SELECT o.id, o.line, o.amount")
    )
    keys = ["id", "line"]
    assert "more than once" in refusal(parse(sql), "merge", keys, "bronze.orders").reason
    joined = sql.replace("r.id = o.id AND", "r.id = o.id AND r.line = o.line AND")
    assert incremental(parse(joined), "merge", keys, "bronze.orders").keys == (
        ("id", "id"),
        ("line", "line"),
    )
