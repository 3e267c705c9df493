"""Column lineage through nested data (struct fields, arrays, UNNEST/explode/LATERAL VIEW/
FLATTEN and their aliases), star modifiers (EXCEPT/EXCLUDE, REPLACE, RENAME), UPDATE, and the
forms that once stopped a file's analysis or lost a column (two unaliased subqueries, a
parenthesised join, an unknown-schema star inside a UNION, a star over a table named under its
alias, empty statements), in the dialects users write them in."""

from __future__ import annotations

import pytest

from medallion_assets.lineage.analysis import SqlFile, analyze

RAW = {"raw_table": {"after": "struct<id:int>", "op": "string"}}

# (dialect, SQL, schema, {output column: its sources}, {output column: unresolved})
CASES = {
    "struct_field_of_a_column": (
        "bigquery",
        "SELECT after.id AS id FROM raw_table",
        {},
        {"id": {"raw_table.after"}},
    ),
    "struct_field_of_a_known_column": (
        "spark",
        "SELECT after.id AS id, op FROM raw_table",
        RAW,
        {"id": {"raw_table.after"}, "op": {"raw_table.op"}},
    ),
    "struct_field_through_the_table": (
        "spark",
        "SELECT raw_table.after.id AS id FROM raw_table",
        RAW,
        {"id": {"raw_table.after"}},
    ),
    "struct_field_through_an_alias": (
        "snowflake",
        "SELECT r.after.id AS id FROM raw_table AS r",
        {},
        {"id": {"raw_table.after"}},
    ),
    "column_through_the_full_name_of_an_aliased_table": (
        "postgres",
        "SELECT db.t.x AS x, y, t1.z AS z FROM db.t AS t1",
        {},
        {"x": {"db.t.x"}, "y": {"db.t.y"}, "z": {"db.t.z"}},
    ),
    "generator_with_an_alias_per_column": (
        "spark",
        "SELECT id, explode(m) AS (k, v) FROM s",
        {},
        {"id": {"s.id"}, "k": {"s.m"}, "v": {"s.m"}},
    ),
    "using_column_of_tables_of_unknown_schema": (
        "spark",
        "SELECT k FROM x JOIN w ON x.i = w.i JOIN y USING (k)",
        {},
        {"k": {"x.k", "y.k"}},
    ),
    "star_inside_a_function": (
        "spark",
        "SELECT id, to_json(struct(*)) AS j, xxhash64(t.*) AS h, count(*) AS n FROM s AS t",
        {"s": {"id": "int", "v": "string"}},
        {"id": {"s.id"}, "j": {"s.id", "s.v"}, "h": {"s.id", "s.v"}, "n": set()},
    ),
    "iceberg_metadata_table_of_four_parts": (
        "spark",
        "SELECT snapshot_id FROM lake.silver.orders.snapshots",
        {},
        {"snapshot_id": {"lake.silver.orders.snapshots.snapshot_id"}},
    ),
    "recursive_cte_reading_itself_through_an_alias": (
        "postgres",
        "WITH RECURSIVE tree AS (SELECT id, name FROM nodes WHERE parent_id IS NULL UNION ALL "
        "SELECT c.id, t.name || '/' || c.name FROM nodes c JOIN tree t ON c.parent_id = t.id) "
        "SELECT id, name FROM tree",
        {},
        {"id": {"nodes.id"}, "name": {"nodes.name"}},
    ),
    "recursive_cte_with_a_column_list": (
        "postgres",
        "WITH RECURSIVE t (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) "
        "SELECT n FROM t",
        {},
        {"n": set()},
    ),
    "window_function_over_a_named_window": (
        "postgres",
        "SELECT a, rank() OVER w AS r, sum(c) OVER (w ROWS 1 PRECEDING) AS s2 FROM s "
        "WINDOW w AS (PARTITION BY d ORDER BY b)",
        {},
        {"a": {"s.a"}, "r": {"s.b", "s.d"}, "s2": {"s.b", "s.c", "s.d"}},
    ),
    "deep_struct_field": (
        "bigquery",
        "SELECT t.payload.customer.address.city AS city FROM events AS t",
        {},
        {"city": {"events.payload"}},
    ),
    "bigquery_unnest_value_alias": (
        "bigquery",
        "SELECT o.id, item FROM orders AS o, UNNEST(o.items) AS item",
        {},
        {"id": {"orders.id"}, "item": {"orders.items"}},
    ),
    "bigquery_unnest_field_of_the_element": (
        "bigquery",
        "SELECT id, item.product_id AS product_id, off FROM orders, UNNEST(items) AS item "
        "WITH OFFSET AS off",
        {},
        {"id": {"orders.id"}, "product_id": {"orders.items"}, "off": {"orders.items"}},
    ),
    "bigquery_cross_join_unnest": (
        "bigquery",
        "SELECT o.id, x.sku FROM orders o CROSS JOIN UNNEST(o.lines) AS x",
        {},
        {"id": {"orders.id"}, "sku": {"orders.lines"}},
    ),
    "spark_lateral_view_explode": (
        "spark",
        "SELECT id, item.product_id AS product_id FROM orders "
        "LATERAL VIEW explode(items) t AS item",
        {},
        {"id": {"orders.id"}, "product_id": {"orders.items"}},
    ),
    "spark_lateral_view_posexplode": (
        "spark",
        "SELECT id, pos, item FROM orders LATERAL VIEW posexplode(items) t AS pos, item",
        {},
        {"id": {"orders.id"}, "pos": {"orders.items"}, "item": {"orders.items"}},
    ),
    "spark_explode_in_select": (
        "spark",
        "SELECT id, explode(items) AS item FROM orders",
        {},
        {"id": {"orders.id"}, "item": {"orders.items"}},
    ),
    "postgres_unnest_with_column_alias": (
        "postgres",
        "SELECT o.id, u.x FROM orders o, unnest(o.items) AS u(x)",
        {},
        {"id": {"orders.id"}, "x": {"orders.items"}},
    ),
    "snowflake_lateral_flatten": (
        "snowflake",
        "SELECT o.id, f.value:product_id AS pid FROM orders o, LATERAL FLATTEN(input => o.items) f",
        {},
        {"id": {"orders.id"}, "pid": {"orders.items"}},
    ),
    "lateral_subquery": (
        "postgres",
        "SELECT t1.id, t2.value FROM t1, LATERAL (SELECT value FROM t2) t2",
        {},
        {"id": {"t1.id"}, "value": {"t2.value"}},
    ),
    "lateral_subquery_correlated_with_column_names": (
        "postgres",
        "SELECT c.id, x.* FROM customers c CROSS JOIN LATERAL "
        "(SELECT sum(o.amount) AS s, max(c.name) AS n FROM orders o WHERE o.cid = c.id) "
        "AS x(total, last_name)",
        {},
        {"id": {"customers.id"}, "total": {"orders.amount"}, "last_name": {"customers.name"}},
    ),
    "spark_lateral_subquery": (
        "spark",
        "SELECT t1.id, x.total FROM t1, LATERAL (SELECT sum(o.amount) AS total FROM orders o "
        "WHERE o.cid = t1.id) x",
        {},
        {"id": {"t1.id"}, "total": {"orders.amount"}},
    ),
    "bigquery_star_except": (
        "bigquery",
        "SELECT * EXCEPT (b) FROM (SELECT a, b, c FROM t)",
        {},
        {"a": {"t.a"}, "c": {"t.c"}},
    ),
    "bigquery_qualified_star_except_of_a_known_table": (
        "bigquery",
        "SELECT t.* EXCEPT (b, c) FROM t",
        {"t": {"a": "int", "b": "int", "c": "int"}},
        {"a": {"t.a"}},
    ),
    "snowflake_star_exclude": (
        "snowflake",
        "SELECT * EXCLUDE (b) FROM (SELECT a, b, c FROM t)",
        {},
        {"a": {"t.a"}, "c": {"t.c"}},
    ),
    "duckdb_star_exclude": (
        "duckdb",
        "SELECT * EXCLUDE (b) FROM t",
        {"t": {"a": "int", "b": "int"}},
        {"a": {"t.a"}},
    ),
    "bigquery_star_replace": (
        "bigquery",
        "SELECT * REPLACE (a + d AS a) FROM (SELECT a, b, d FROM t)",
        {},
        {"a": {"t.a", "t.d"}, "b": {"t.b"}, "d": {"t.d"}},
    ),
    "snowflake_star_rename": (
        "snowflake",
        "SELECT * RENAME (a AS z) FROM (SELECT a, b FROM t)",
        {},
        {"z": {"t.a"}, "b": {"t.b"}},
    ),
    "two_unaliased_subqueries": (
        "spark",
        "SELECT a, b FROM (SELECT x AS a FROM t), (SELECT y AS b FROM u)",
        {},
        {"a": {"t.x"}, "b": {"u.y"}},
    ),
    "unaliased_subqueries_joined_using": (
        "bigquery",
        "SELECT k, n FROM (SELECT k, count(*) AS n FROM t GROUP BY k) JOIN (SELECT k FROM u) "
        "USING (k)",
        {},
        {"k": {"t.k", "u.k"}, "n": set()},
    ),
    "union_of_an_unknown_star_first": (
        "spark",
        "SELECT * FROM t UNION ALL SELECT a, b FROM u",
        {},
        {"a": {"t.a", "u.a"}, "b": {"t.b", "u.b"}},
    ),
    "union_of_an_unknown_star_last": (
        "spark",
        "SELECT a, b FROM u UNION ALL SELECT * FROM t",
        {},
        {"a": {"t.a", "u.a"}, "b": {"t.b", "u.b"}},
    ),
    "parenthesised_join": (
        "spark",
        "SELECT t2.col1 FROM ((tab2 AS t2 JOIN tab1 AS t1 ON t2.id = t1.t2_id))",
        {},
        {"col1": {"tab2.col1"}},
    ),
    "parenthesised_join_of_derived_tables": (
        "spark",
        "SELECT a, b FROM ((SELECT a FROM t) JOIN (SELECT b FROM u) ON true)",
        {},
        {"a": {"t.a"}, "b": {"u.b"}},
    ),
    "parenthesised_join_under_an_alias": (
        "spark",
        "SELECT tx.a, tx.b FROM (t1 CROSS JOIN t2) AS tx",
        {"t1": {"a": "int"}, "t2": {"b": "int"}},
        {"a": {"t1.a"}, "b": {"t2.b"}},
    ),
    "parenthesised_join_under_an_alias_with_columns": (
        "spark",
        "SELECT ii, jj FROM (t1 JOIN t2 ON t1.k = t2.j) AS tx(ii, jj)",
        {"t1": {"k": "int"}, "t2": {"j": "int"}},
        {"ii": {"t1.k"}, "jj": {"t2.j"}},
    ),
    "date_unit_of_a_function_sqlglot_does_not_know": (
        "spark",
        "SELECT timediff(QUARTER, t1, t2) AS d, dateadd(day, 1, t1) AS e FROM t",
        {},
        {"d": {"t.t1", "t.t2"}, "e": {"t.t1"}},
    ),
    "collation_of_a_cast_and_of_a_column": (
        "spark",
        "SELECT cast(s AS STRING COLLATE utf8_lcase) AS c, "
        "s COLLATE system.builtin.UTF8_BINARY AS d FROM t",
        {},
        {"c": {"t.s"}, "d": {"t.s"}},
    ),
    "grouping_id_of_spark": (
        "spark",
        "SELECT a, grouping__id, grouping__id + 1 AS g FROM t GROUP BY GROUPING SETS ((a), ())",
        {},
        {"a": {"t.a"}, "grouping__id": set(), "g": set()},
    ),
    "a_column_named_like_a_unit_in_a_users_function": (
        "spark",
        "SELECT my_udf(day, x) AS z FROM t",
        {},
        {"z": {"t.day", "t.x"}},
    ),
    "one_table_name_in_two_databases_read_by_qualified_columns": (
        "spark",
        "SELECT prod.orders.id, staging.orders.amount FROM prod.orders "
        "JOIN staging.orders ON prod.orders.id = staging.orders.id",
        {},
        {"id": {"prod.orders.id"}, "amount": {"staging.orders.amount"}},
    ),
    "values_columns_named_as_spark_names_them": (
        "spark",
        "SELECT v.col1 AS k, t.x FROM VALUES (1, 'a') AS v JOIN t ON t.k = v.col1",
        {},
        {"k": set(), "x": {"t.x"}},
    ),
    "values_columns_named_as_postgres_names_them": (
        "postgres",
        "WITH c (k) AS (VALUES (1)) SELECT c.k, v.column2 FROM c, (VALUES (1, 2)) AS v",
        {},
        {"k": set(), "column2": set()},
    ),
    "field_of_an_unaliased_unnest_in_a_scalar_subquery": (  # GA4's event_params
        "bigquery",
        "SELECT (SELECT value.int_value FROM UNNEST(event_params) WHERE key = 'k') AS v "
        "FROM d.events",
        {},
        {"v": {"d.events.event_params"}},
    ),
    "field_of_an_unaliased_unnest_beside_a_cte": (
        "bigquery",
        "WITH b AS (SELECT arr FROM d.t) SELECT x FROM b, UNNEST(arr)",
        {},
        {"x": {"d.t.arr"}},
    ),
    "alias_star_over_an_unnest_of_structs": (
        "bigquery",
        "SELECT c.* FROM d.t, UNNEST([STRUCT(t.a AS p, t.b AS o)]) AS c",
        {},
        {"p": {"d.t.a"}, "o": {"d.t.b"}},
    ),
    "structs_named_by_the_first_of_an_array_literal": (
        "bigquery",
        "SELECT h FROM d.t, UNNEST([STRUCT(a AS h), STRUCT(b)])",
        {"d.t": {"a": "int64", "b": "int64"}},
        {"h": {"d.t.a", "d.t.b"}},
    ),
    "structs_of_an_array_subquery": (
        "bigquery",
        "SELECT e FROM d.t, UNNEST(ARRAY(SELECT AS STRUCT MIN(x) AS e FROM UNNEST(xs) AS x))",
        {"d.t": {"xs": "array<int64>"}},
        {"e": {"d.t.xs"}},
    ),
    "typed_array_of_structs": (
        "bigquery",
        "SELECT u.x, u.y FROM d.t, "
        "UNNEST(ARRAY<STRUCT<x INT64, y STRING>>[(1, t.a), (t.b, 'c')]) u",
        {},
        {"x": {"d.t.b"}, "y": {"d.t.a"}},
    ),
    "value_table_of_a_struct": (
        "bigquery",
        "WITH h AS (SELECT AS VALUE STRUCT(a AS n, b AS m) FROM d.t) SELECT h.n FROM h",
        {},
        {"n": {"d.t.a"}},
    ),
    "field_of_an_aliased_unnest_of_structs": (
        "bigquery",
        "SELECT c.p AS q FROM d.t, UNNEST([STRUCT(t.a AS p, t.b AS o)]) AS c",
        {},
        {"q": {"d.t.a"}},
    ),
    "view_with_columns_over_a_doubly_parenthesised_query": (
        "spark",
        "CREATE VIEW my_view (random1, random2) AS ((SELECT col1, col2 FROM tbl))",
        {},
        {"random1": {"tbl.col1"}, "random2": {"tbl.col2"}},
    ),
    "star_of_a_table_named_under_its_alias": (
        "spark",
        "SELECT tab2.* FROM tab2 a JOIN tab3 b ON a.id = b.id",
        {"tab2": {"id": "int", "x": "int"}},
        {"id": {"tab2.id"}, "x": {"tab2.x"}},
    ),
    "empty_statements": ("spark", "SELECT a FROM t;;", {}, {"a": {"t.a"}}),
    "empty_statement_after_a_comment": (
        "spark",
        "SELECT a FROM t;\n-- done\n;\n/* really */ ;",
        {},
        {"a": {"t.a"}},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_column_lineage_of_the_form(name: str):
    dialect, sql, schema, expected = CASES[name]
    analysis = analyze([SqlFile("f.sql", sql, dialect, "out.t")], schema)
    assert analysis.errors == ()
    columns = analysis.lineage["f.sql"].columns
    assert columns is not None
    found = {c.column: set(c.sources) for c in columns}
    assert found == expected
    assert [c.unresolved for c in columns if c.unresolved] == []


def test_an_unknown_star_with_except_stays_one_unresolved_star_naming_its_table():
    analysis = analyze([SqlFile("f.sql", "SELECT * EXCEPT (b) FROM t", "bigquery", "o")], {})
    (column,) = analysis.lineage["f.sql"].columns or ()
    assert column.column == "*" and column.sources == ("t.*",)
    assert column.unresolved is not None and "t" in column.unresolved


def test_a_union_branch_whose_columns_cannot_be_listed_is_said_not_an_error():
    sql = "SELECT a, b FROM u UNION ALL SELECT * FROM generate_series(1, 3)"
    analysis = analyze([SqlFile("f.sql", sql, "postgres", "o")], {})
    assert analysis.errors == ()
    columns = analysis.lineage["f.sql"].columns or ()
    assert [c.column for c in columns] == ["a", "b"]
    assert {s for c in columns for s in c.sources} == {"u.a", "u.b"}
    assert all(c.unresolved == "a branch's columns could not be listed" for c in columns)


@pytest.mark.parametrize(
    ("sql", "reason"),
    [
        ("SELECT x.* FROM tab2 a JOIN tab3 b ON a.k = b.k", "'x.*': no table or alias named 'x'"),
        ("SELECT * FROM range(10)", "'*' over the table function RANGE(10)"),
    ],
)
def test_a_star_that_cannot_be_expanded_is_one_unresolved_column_never_none(sql, reason):
    analysis = analyze([SqlFile("f.sql", sql, "spark", "o")], {})
    (column,) = analysis.lineage["f.sql"].columns or ()
    assert column.column == "*"
    assert column.unresolved is not None and column.unresolved.startswith(reason)


UPDATES = {
    "postgres_update_from": (
        "postgres",
        "UPDATE public.tgt AS t SET name = s.name, email = s.address FROM public.src AS s "
        "WHERE s.id = t.id",
        "public.tgt",
        {"name": {"public.src.name"}, "email": {"public.src.address"}},
    ),
    "tsql_update_alias_from_join": (
        "tsql",
        "UPDATE t SET t.c = s.c FROM tab1 t JOIN tab2 s ON t.id = s.id",
        "tab1",
        {"c": {"tab2.c"}},
    ),
    "mysql_update_join": (
        "mysql",
        "UPDATE tab1 a INNER JOIN tab2 b ON a.id = b.id SET a.col1 = b.col1",
        "tab1",
        {"col1": {"tab2.col1"}},
    ),
    "spark_update_from_a_subquery": (
        "spark",
        "UPDATE tab1 SET col1 = (SELECT max(x) FROM tab2)",
        "tab1",
        {"col1": {"tab2.x"}},
    ),
    "postgres_update_with_a_cte": (
        "postgres",
        "WITH s AS (SELECT id, v FROM src) UPDATE tgt SET v = s.v FROM s WHERE s.id = tgt.id",
        "tgt",
        {"v": {"src.v"}},
    ),
    "update_of_its_own_column": ("postgres", "UPDATE tgt SET a = a + 1", "tgt", {"a": {"tgt.a"}}),
}


@pytest.mark.parametrize("name", sorted(UPDATES))
def test_an_update_gives_the_lineage_of_the_columns_it_sets(name: str):
    dialect, sql, target, expected = UPDATES[name]
    analysis = analyze([SqlFile("f.sql", sql, dialect, None)], {})
    assert analysis.errors == ()
    lineage = analysis.lineage["f.sql"]
    assert (lineage.kind, lineage.target) == ("update", target)
    assert target not in lineage.sources  # the table it changes is not its own input
    assert {c.column: set(c.sources) for c in lineage.columns or ()} == expected


@pytest.mark.parametrize(
    ("sql", "sources", "reason"),
    [
        (
            "SELECT s.* FROM (SELECT STRUCT(a, b) AS s FROM d.t)",
            {"d.t.a", "d.t.b"},
            "'s.*': the fields of the column 's' are unknown",
        ),
        (
            "SELECT info.id AS x FROM d.t JOIN d.u USING (k)",
            set(),
            "info: ambiguous, could come from d.t, d.u (schemas unknown)",
        ),
    ],
)
def test_a_struct_read_that_cannot_be_listed_says_why(sql: str, sources: set, reason: str):
    analysis = analyze([SqlFile("f.sql", sql, "bigquery", "out.t")], {})
    assert analysis.errors == ()
    (column,) = analysis.lineage["f.sql"].columns or ()
    assert (set(column.sources), column.unresolved) == (sources, reason)
