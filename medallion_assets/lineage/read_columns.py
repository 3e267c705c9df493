"""Which columns of one table a query reads anywhere (its SELECT list, joins, WHERE, GROUP BY,
window, HAVING, ORDER BY, subqueries and CTEs): what a change to that table's columns can
reach. An unqualified column counts for the table when the query it is in reads the table
(it may be the table's); a ``*`` over the table reads all of them (None).

>>> from medallion_assets.lineage.statement import parse_statement
>>> sql = '''WITH p AS (SELECT product_id, price FROM silver.products WHERE active)
...          SELECT o.id, p.price FROM silver.orders o JOIN p ON o.product_id = p.product_id'''
>>> sorted(columns_read(parse_statement(sql, "spark", "gold.x"), "silver.products"))
['active', 'price', 'product_id']
>>> columns_read(parse_statement("SELECT * FROM silver.products", "spark", "gold.y"),
...              "silver.products") is None
True
>>> columns_read(parse_statement("SELECT count(*) AS n FROM silver.products", "spark", "g.z"),
...              "silver.products")
frozenset()

``columns_spelled`` is the safe side of it, for a view that stands in for a table: the
table's columns whose names the SQL spells anywhere.

>>> sql = "SELECT order_id, sum(x.qty) AS n FROM bronze.orders LATERAL VIEW explode(items) t AS x"
>>> columns_spelled(parse_statement(sql + " GROUP BY 1", "spark", "s.i"), sql, "bronze.orders",
...                 ["order_id", "items", "status", "order date"])
['order_id', 'items', 'order date']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlglot import exp
from sqlglot.optimizer.scope import traverse_scope

from medallion_assets.lineage.statement import Statement, table_name


def columns_read(statement: Statement, table: str) -> frozenset[str] | None:
    """The names of ``table``'s columns ``statement`` reads; None when it reads them all (a
    ``*``, or a statement whose reads cannot be told apart: a MERGE)."""
    query = statement.query
    if query is None:
        return None
    found: set[str] = set()
    try:
        scopes = traverse_scope(query)
    except Exception:  # sqlglot cannot scope it: every column may be read
        return None
    for scope in scopes:
        mine = {
            alias
            for alias, source in scope.sources.items()
            if isinstance(source, exp.Table) and table_name(source) == table
        }
        if not mine:
            continue
        select = scope.expression
        projections = select.expressions if isinstance(select, exp.Select) else []
        for projection in projections:
            if isinstance(projection, exp.Star) or (
                isinstance(projection, exp.Column) and projection.is_star
            ):
                owner = projection.table if isinstance(projection, exp.Column) else ""
                if not owner or owner in mine:
                    return None
        for column in scope.columns:
            if column.table in mine or not column.table:
                found.add(column.name.lower())
    return frozenset(found)


_WORD = re.compile(r"[^\W\d]\w*")


def columns_spelled(
    statement: Statement, sql: str, table: str, columns: Sequence[str]
) -> list[str]:
    """Those of ``table``'s ``columns`` that the SQL file ``sql`` (``statement`` parsed from
    it) may read by name: each whose name it spells anywhere as a word, and any whose name is
    not a plain word; all of them when it reads them all (a ``*`` over the table, a NATURAL
    join, a statement that cannot be scoped). A column Spark resolves is spelled in the SQL,
    so a view of these columns answers it as the whole table does, and reads less (a nested
    column it never names, say)."""
    if columns_read(statement, table) is None or re.search(r"\bnatural\b", sql, re.IGNORECASE):
        return list(columns)
    words = {word.lower() for word in _WORD.findall(sql)}
    return [c for c in columns if c.lower() in words or not _WORD.fullmatch(c)]
