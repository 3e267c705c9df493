"""Statements written in a dialect's own form, rewritten to the common form the lineage reads.

- Spark's ``IDENTIFIER('db.t')`` clause names a table or column by a string literal: it becomes
  the name itself (```db`.`t```) before parsing, wherever it stands (a FROM, an INSERT's target,
  a column). ``IDENTIFIER(:param)`` names nothing known before the run and is left as it is.
- A multi-table insert is one INSERT per target: Hive's and Spark's ``FROM s INSERT INTO t1
  SELECT ... INSERT OVERWRITE TABLE t2 SELECT ...`` (each SELECT reads ``s``), and Oracle's and
  Snowflake's ``INSERT ALL|FIRST [WHEN ...] INTO t1 [(cols)] [VALUES (...)] ... SELECT ...``
  (each INTO takes the SELECT's rows; its VALUES pick the SELECT's columns). The conditions
  filter rows and move no values, so they are not part of the lineage.
- ``ALTER VIEW v AS SELECT ...`` redefines the view: it is ``CREATE OR REPLACE VIEW v AS SELECT``.
- A window function over a named window (``rank() OVER w ... WINDOW w AS (PARTITION BY a ORDER
  BY b)``) reads the named window's partition and order as an inline ``OVER (...)`` does.
"""

from __future__ import annotations

import re

from sqlglot import exp

_IDENTIFIER_CLAUSE = re.compile(r"\bIDENTIFIER\s*\(\s*(?:'([^'\\]*)'|\"([^\"\\]*)\")\s*\)", re.I)
SPARK_DIALECTS = frozenset({"spark", "spark2", "databricks", "hive"})
MULTITABLE_SOURCE = "_multitable_source_"
# A file that may be one multi-table insert: Hive's FROM first, or INSERT ALL / INSERT FIRST.
MULTITABLE_HINT = re.compile(
    r"\binsert\s+(?:all|first)\b|^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*from\b", re.I | re.S
)


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


def inline_named_windows(statement: exp.Expr) -> None:
    """Give every ``OVER w`` (or ``OVER (w ROWS ...)``) the partition and order of the SELECT's
    ``WINDOW w AS (...)``, in place; the WINDOW clause stays.

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT rank() OVER w AS r FROM s WINDOW w AS (PARTITION BY a "
    ...     "ORDER BY b)", read="postgres")
    >>> inline_named_windows(q)
    >>> q.expressions[0].sql("postgres")
    'RANK() OVER (PARTITION BY a ORDER BY b) AS r'
    """
    for select in statement.find_all(exp.Select):
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
