"""Statements written in a dialect's own form, rewritten to the common form the lineage reads.

- Spark's ``IDENTIFIER('db.t')`` clause names a table or column by a string literal: it becomes
  the name itself (```db`.`t```) before parsing, wherever it stands (a FROM, an INSERT's target,
  a column). ``IDENTIFIER(:param)`` names nothing known before the run and is left as it is.
- Spark's ``TABLE t`` query (``INSERT INTO x TABLE t``, ``... UNION ALL TABLE t``, ``(TABLE t)``,
  ``CREATE VIEW v AS TABLE t``) is ``SELECT * FROM t``.
- A multi-table insert is one INSERT per target: Hive's and Spark's ``FROM s INSERT INTO t1
  SELECT ... INSERT OVERWRITE TABLE t2 SELECT ...`` (each SELECT reads ``s``), and Oracle's and
  Snowflake's ``INSERT ALL|FIRST [WHEN ...] INTO t1 [(cols)] [VALUES (...)] ... SELECT ...``
  (each INTO takes the SELECT's rows; its VALUES pick the SELECT's columns). The conditions
  filter rows and move no values, so they are not part of the lineage.
- ``ALTER VIEW v AS SELECT ...`` redefines the view: it is ``CREATE OR REPLACE VIEW v AS SELECT``.
- Words that are not columns are not read as columns: the unit of ``timediff(QUARTER, a, b)``
  and the other date functions sqlglot does not know, a collation (``COLLATE utf8_lcase``),
  Spark's ``grouping__id`` (the grouping set of a row, no column of a table).
- Two tables of one FROM named alike in different databases (``FROM prod.orders JOIN
  staging.orders``) get aliases; a column qualified by its database reads its own table.
- The columns of a ``VALUES`` in a FROM without names are named as the dialect names them
  (Spark's ``col1``, PostgreSQL's and Snowflake's ``column1``).
- A window function over a named window (``rank() OVER w ... WINDOW w AS (PARTITION BY a ORDER
  BY b)``) reads the named window's partition and order as an inline ``OVER (...)`` does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import TokenType

from medallion_assets.lineage.relations import is_table_function
from medallion_assets.lineage.script import table_name

_IDENTIFIER_CLAUSE = re.compile(r"\bIDENTIFIER\s*\(\s*(?:'([^'\\]*)'|\"([^\"\\]*)\")\s*\)", re.I)
SPARK_DIALECTS = frozenset({"spark", "spark2", "databricks", "hive"})
MULTITABLE_SOURCE = "_multitable_source_"
# A file that may be one multi-table insert: Hive's FROM first, or INSERT ALL / INSERT FIRST.
MULTITABLE_HINT = re.compile(
    r"\binsert\s+(?:all|first)\b|^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*from\b", re.I | re.S
)


def common_text(sql: str, dialect: str) -> str:
    """``sql`` with the dialect's own forms rewritten before parsing: ``IDENTIFIER('...')``
    clauses and ``TABLE t`` queries."""
    return table_queries(identifier_clauses(sql, dialect), dialect)


def identifier_clauses(sql: str, dialect: str) -> str:
    """``sql`` with Spark's ``IDENTIFIER('...')`` clauses replaced by the names they hold.

    >>> identifier_clauses("INSERT INTO IDENTIFIER('db.t') SELECT a FROM identifier('s')", "spark")
    'INSERT INTO `db`.`t` SELECT a FROM `s`'
    >>> identifier_clauses("SELECT IDENTIFIER('`my db`.t') FROM s", "databricks")
    'SELECT `my db`.t FROM s'
    """
    if dialect not in SPARK_DIALECTS or "identifier" not in sql.lower():
        return sql

    def name(match: re.Match[str]) -> str:
        text = match.group(1) if match.group(1) is not None else match.group(2)
        if "`" in text:
            return text  # already quoted as the user wants it
        return ".".join(f"`{part.strip()}`" for part in text.split("."))

    return _IDENTIFIER_CLAUSE.sub(name, sql)


_TABLE_QUERY_HINT = re.compile(
    r"(?:^|[(;]|\b(?:union|intersect|except|all|distinct|as)\b)\s*table\s|(?:^|;)\s*insert\b.*\btable\s",
    re.I | re.S | re.M,
)
_SET_OPERATORS = frozenset(
    {TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT, TokenType.ALL, TokenType.DISTINCT}
)
_NAME = frozenset({TokenType.VAR, TokenType.IDENTIFIER})


def table_queries(sql: str, dialect: str) -> str:
    """``sql`` with Spark's ``TABLE t`` queries written ``SELECT * FROM t``.

    >>> table_queries("INSERT INTO x TABLE s", "spark")
    'INSERT INTO x SELECT * FROM s'
    >>> table_queries("WITH c AS (TABLE s) SELECT a FROM c UNION ALL TABLE db.u", "spark")
    'WITH c AS (SELECT * FROM s) SELECT a FROM c UNION ALL SELECT * FROM db.u'
    >>> table_queries("CREATE EXTERNAL TABLE x (a INT); INSERT OVERWRITE TABLE t TABLE s", "hive")
    'CREATE EXTERNAL TABLE x (a INT); INSERT OVERWRITE TABLE t SELECT * FROM s'
    """
    if dialect not in SPARK_DIALECTS or not _TABLE_QUERY_HINT.search(sql):
        return sql
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except SqlglotError:
        return sql  # the parse says why
    starts, first, depth, previous = [], None, 0, None
    for index, token in enumerate(tokens):
        kind = token.token_type
        following = tokens[index + 1].token_type if index + 1 < len(tokens) else None
        if kind == TokenType.TABLE and following in _NAME:
            before = previous.token_type if previous is not None else TokenType.SEMICOLON
            inserted = first == TokenType.INSERT and depth == 0  # INSERT INTO t [(a)] TABLE s
            if before in (TokenType.SEMICOLON, TokenType.L_PAREN, TokenType.ALIAS) or (
                before in _SET_OPERATORS or (inserted and before in (*_NAME, TokenType.R_PAREN))
            ):
                starts.append(token)
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        first = None if kind == TokenType.SEMICOLON else first or kind
        previous = token
    for token in reversed(starts):
        sql = sql[: token.start] + "SELECT * FROM" + sql[token.end + 1 :]
    return sql


def view_redefinition(statement: exp.Expr) -> exp.Expr:
    """``ALTER VIEW v AS <query>`` as ``CREATE OR REPLACE VIEW v AS <query>``; any other
    statement as it is.

    >>> import sqlglot
    >>> view_redefinition(sqlglot.parse_one("ALTER VIEW v AS SELECT a FROM t", read="spark")).sql()
    'CREATE OR REPLACE VIEW v AS SELECT a FROM t'
    """
    if not isinstance(statement, exp.Alter) or str(statement.args.get("kind")).upper() != "VIEW":
        return statement
    actions = statement.args.get("actions") or []
    if len(actions) != 1 or not isinstance(actions[0], exp.Query):
        return statement  # ALTER VIEW v RENAME TO ..., SET TBLPROPERTIES ...: no rows move
    return exp.Create(
        this=statement.this.copy(), kind="VIEW", replace=True, expression=actions[0].copy()
    )


def split_multitable(statement: exp.Expr) -> list[exp.Expr]:
    """A multi-table insert as one INSERT per target; any other statement as it is.

    >>> import sqlglot
    >>> hive = sqlglot.parse_one("FROM s INSERT INTO t1 SELECT a WHERE a > 1 "
    ...     "INSERT OVERWRITE TABLE t2 SELECT b", read="spark")
    >>> [i.sql("spark") for i in split_multitable(hive)]
    ['INSERT INTO t1 SELECT a FROM s WHERE a > 1', 'INSERT OVERWRITE TABLE t2 SELECT b FROM s']
    >>> oracle = sqlglot.parse_one("INSERT ALL INTO t1 (k, v) VALUES (x, y) INTO t2 "
    ...     "SELECT x, y FROM s", read="snowflake")
    >>> [i.sql("snowflake") for i in split_multitable(oracle)]  # doctest: +NORMALIZE_WHITESPACE
    ['INSERT INTO t1 (k, v) SELECT x, y FROM (SELECT x, y FROM s) AS _multitable_source_',
     'INSERT INTO t2 SELECT * FROM (SELECT x, y FROM s) AS _multitable_source_']
    """
    if not isinstance(statement, exp.MultitableInserts):
        return [statement]
    source = statement.args.get("source")
    shared = statement.args.get("with_")  # WITH s AS (...) FROM s INSERT ... INSERT ...
    oracle = statement.args.get("kind") is not None  # INSERT ALL / FIRST
    inserts: list[exp.Expr] = []
    for entry in statement.expressions:
        insert = entry.this if isinstance(entry, exp.ConditionalInsert) else entry
        if not isinstance(insert, exp.Insert) or source is None:
            continue
        one = insert.copy()
        one.set("expression", _rows(insert.expression, source, oracle))
        if shared is not None:
            one.set("with_", shared.copy())
        inserts.append(one)
    return inserts or [statement]


def _rows(taken: exp.Expr | None, source: exp.Expr, oracle: bool) -> exp.Query:
    """The query whose rows one INTO of a multi-table insert writes; ``oracle``: of an
    ``INSERT ALL|FIRST ... SELECT`` (else Hive's ``FROM source INSERT ...``)."""
    if isinstance(taken, exp.Select) and not oracle:
        query = taken.copy()  # Hive: FROM source INSERT ... SELECT ... (no FROM of its own)
        if not query.args.get("from_"):
            query.set("from_", exp.From(this=source.copy()))
        return query
    if oracle:
        rows = exp.Subquery(
            this=source.copy(), alias=exp.TableAlias(this=exp.to_identifier(MULTITABLE_SOURCE))
        )
        values = taken.expressions if isinstance(taken, exp.Values) else []
        picked = values[0].expressions if values and isinstance(values[0], exp.Tuple) else []
        columns = [e.copy() for e in picked] or [exp.Star()]
        return exp.select(*columns).from_(rows)
    return exp.select(exp.Star()).from_(source.copy())  # INTO t VALUES ... FROM s: its rows


# The nodes ``common_form`` rewrites.
COMMON_KINDS = (exp.Select, exp.Anonymous, exp.Collate, exp.DataType, exp.Column, exp.Values)


def common_form(
    statement: exp.Expr, dialect: str = "", nodes: Sequence[exp.Expr] | None = None
) -> None:
    """Named windows inlined, tables of one FROM named alike given aliases, the columns of a
    ``VALUES`` named as ``dialect`` names them and words that are not columns turned into what
    they are, in place, in one walk of ``statement`` (or over its ``nodes`` of a walk the
    caller made, ``COMMON_KINDS`` among them).

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT rank() OVER w AS r FROM s WINDOW w AS (PARTITION BY a "
    ...     "ORDER BY b)", read="postgres")
    >>> common_form(q)
    >>> q.expressions[0].sql("postgres")
    'RANK() OVER (PARTITION BY a ORDER BY b) AS r'
    >>> q = sqlglot.parse_one("SELECT timediff(QUARTER, a, b), c COLLATE utf8_lcase, "
    ...     "grouping__id FROM t", read="spark")
    >>> common_form(q)
    >>> sorted(c.name for c in q.find_all(exp.Column))
    ['a', 'b', 'c']
    """
    for node in list(statement.find_all(*COMMON_KINDS)) if nodes is None else nodes:
        if not isinstance(node, COMMON_KINDS):
            continue
        if isinstance(node, exp.Values):
            _name_values_columns(node, dialect)
        elif isinstance(node, exp.Select):
            if node.args.get("windows"):
                _inline_named_windows(node)
            if node.args.get("joins"):
                _alias_same_named_tables(node)
        else:
            _word_not_column(node)


def _alias_same_named_tables(select: exp.Select) -> None:
    """Give an alias to each of two tables of one FROM clause named alike in different
    databases (``FROM prod.orders JOIN staging.orders``, as Spark and Snowflake allow), in
    place; a column qualified by its database (``staging.orders.amount``) then reads its own
    table. A column qualified by the bare name stays ambiguous."""
    named: dict[str, list[exp.Table]] = {}
    for table in _from_tables(select):
        if not table.alias and table.db and not is_table_function(table):
            named.setdefault(table.name, []).append(table)
    columns: list[exp.Column] = []
    for name, tables in named.items():
        if len({table_name(t) for t in tables}) < 2:
            continue
        columns = columns or list(select.find_all(exp.Column))  # walked once, if at all
        for number, table in enumerate(tables, start=1):
            alias = f"_{name}_{number}_"
            for column in columns:
                if column.table == name and column.db == table.db:
                    column.set("db", None)
                    column.set("catalog", None)
                    column.set("table", exp.to_identifier(alias))
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))


def _from_tables(select: exp.Select) -> list[exp.Table]:
    joins = select.args.get("joins") or []
    from_ = select.args.get("from_")
    sources = [from_.this] if isinstance(from_, exp.From) else []
    sources += [join.this for join in joins]
    return [s for s in sources if isinstance(s, exp.Table)]


def _name_values_columns(values: exp.Values, dialect: str) -> None:
    """``FROM VALUES (1, 'a')`` without column names: Spark's ``col1, col2``, the others'
    ``column1, column2`` (PostgreSQL, Snowflake, DuckDB, Redshift)."""
    alias = values.args.get("alias")
    if not isinstance(values.parent, (exp.From, exp.Join)) or (alias and alias.columns):
        return
    first = values.expressions[0] if values.expressions else None
    width = len(first.expressions) if isinstance(first, exp.Tuple) else 1
    stem = "col" if dialect in SPARK_DIALECTS else "column"
    columns = [exp.to_identifier(f"{stem}{n}") for n in range(1, width + 1)]
    name = alias.this if alias and alias.this else exp.to_identifier("_values")
    values.set("alias", exp.TableAlias(this=name, columns=columns))


def _inline_named_windows(select: exp.Select) -> None:
    """Give every ``OVER w`` (or ``OVER (w ROWS ...)``) the partition and order of the SELECT's
    ``WINDOW w AS (...)``; the WINDOW clause stays."""
    named = {w.name: w for w in select.args.get("windows") or [] if isinstance(w, exp.Window)}
    for window in select.find_all(exp.Window) if named else ():
        definition = named.get(window.alias) if window.args.get("alias") else None
        if definition is None or window.find_ancestor(exp.Select) is not select:
            continue
        if not window.args.get("partition_by") and definition.args.get("partition_by"):
            window.set("partition_by", [e.copy() for e in definition.args["partition_by"]])
        if not window.args.get("order") and definition.args.get("order"):
            window.set("order", definition.args["order"].copy())
        window.set("alias", None)


# Functions sqlglot keeps as anonymous whose first argument may be a date or time unit.
_UNIT_FIRST = frozenset(
    {"timediff", "timestampdiff", "timestampadd", "timestamp_diff", "timestamp_add", "dateadd",
     "datediff", "date_diff", "date_add", "datetime_diff", "datetime_add", "time_diff",
     "date_trunc", "datetrunc", "datepart", "date_part", "datename", "time_bucket", "age"}
)  # fmt: skip
DATE_UNITS = frozenset(
    {"year", "years", "yy", "yyyy", "quarter", "quarters", "qq", "month", "months", "mm", "week",
     "weeks", "wk", "ww", "day", "days", "dd", "d", "dayofyear", "dy", "dayofweek", "dw",
     "weekday", "hour", "hours", "hh", "minute", "minutes", "mi", "n", "second", "seconds", "ss",
     "s", "millisecond", "milliseconds", "ms", "microsecond", "microseconds", "mcs",
     "nanosecond", "ns", "isoweek", "isoyear", "epoch"}
)  # fmt: skip


def _word_not_column(node: exp.Expr) -> None:
    """A word sqlglot reads as a column but that names none as what it is: a date unit, a
    collation, Spark's ``grouping__id``."""
    if isinstance(node, exp.Anonymous) and str(node.this).lower() in _UNIT_FIRST:
        unit = node.expressions[0] if node.expressions else None
        if unit is not None and _bare(unit) and unit.name.lower() in DATE_UNITS:
            unit.replace(exp.var(unit.name))
    elif isinstance(node, (exp.Collate, exp.DataType)):
        collation = node.args.get("expression" if isinstance(node, exp.Collate) else "collate")
        if isinstance(collation, exp.Column):
            collation.replace(exp.var(collation.sql()))
    elif _bare(node) and node.name.lower() == "grouping__id":
        grouping: exp.Expr = exp.Anonymous(this="grouping_id")
        named = isinstance(node.parent, exp.Select) and node.arg_key == "expressions"
        node.replace(exp.alias_(grouping, node.name) if named else grouping)


def _bare(node: exp.Expr | None) -> bool:
    """An unqualified, unquoted column name."""
    return (
        isinstance(node, exp.Column)
        and not node.table
        and isinstance(node.this, exp.Identifier)
        and not node.this.quoted
    )
