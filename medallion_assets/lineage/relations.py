"""The relations a query's scopes read: the real tables among them (CTE names, aliases and
table functions told apart) and the check that one FROM clause names each relation once."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from medallion_assets.lineage.script import SqlError, table_name


def real_tables(root: Scope) -> list[exp.Table]:
    """Table nodes that name a real table (not a CTE), semi and anti joins included. Two
    relations of one FROM clause under one name leave one of them in the scope's sources: the
    other is still read, a real table unless it names a CTE (``check_distinct_names`` keeps
    column lineage from guessing which one a column of that name is)."""
    tables: list[exp.Table] = []
    for scope in root.traverse():
        for table in scope.tables:
            if is_table_function(table):
                # generate_series(1, 3), SEMANTIC_VIEW(v ...): the tables named inside are read
                tables.extend(function_tables(table))
                continue
            source = scope.sources.get(table.alias_or_name)
            cte = not table.db and not table.catalog and table.name in scope.cte_sources
            if source is table or (source is not None and not cte):
                tables.append(table)
    return tables


def is_table_function(table: exp.Table) -> bool:
    """A call in FROM (``generate_series(1, 3)``), not a name (``db.t``, Snowflake's stage
    ``@schema.stage``, an Iceberg metadata table ``lake.db.t.snapshots``)."""
    name = table.this
    if isinstance(name, exp.Dot):  # a name of four parts or more
        return not all(isinstance(part, (exp.Identifier, exp.Var)) for part in name.flatten())
    return not isinstance(name, (exp.Identifier, exp.Var))


def function_tables(table: exp.Table) -> list[exp.Table]:
    """The tables named inside a table function's call (none for ``range(10)``)."""
    return [t for t in table.this.find_all(exp.Table) if not is_table_function(t)]


def check_distinct_names(scope: Scope) -> None:
    """Two different tables (or a table and a subquery) of one FROM clause under one name leave
    only one of them in the scope's sources: a column qualified by that name could be either.
    Warehouses refuse such a query too ("table name specified more than once"); its tables are
    still its lineage, its column lineage is refused. One table read twice under its own name
    is left to column lineage to report."""
    seen: dict[str, str] = {}
    for source in [*scope.tables, *scope.derived_tables]:
        name = source.alias_or_name
        if not name:
            continue
        what = table_name(source) if isinstance(source, exp.Table) else "a subquery"
        if isinstance(source, exp.Table) and not source.db and source.name in scope.cte_sources:
            what = f"the CTE {source.name}"
        if name in seen and (seen[name] != what or what == "a subquery"):
            raise SqlError(
                f"two tables or subqueries in one FROM clause are both named {name!r} "
                f"({seen[name]} and {what}): give each its own alias"
            )
        seen[name] = what
