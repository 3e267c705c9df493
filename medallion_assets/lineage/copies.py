"""Statements that copy rows whole between tables and files, as the query lineage reads.

``COPY t FROM 's3://b/p'`` (PostgreSQL, Redshift, Snowflake's ``COPY INTO``, T-SQL), Redshift's
``UNLOAD ('SELECT ...') TO 's3://...'``, ``INSERT OVERWRITE DIRECTORY 'path' SELECT ...``,
``CREATE TABLE t LIKE s`` / ``CLONE s``, ``ALTER TABLE s RENAME TO t`` and the statements that
move a table's rows into another (Snowflake's ``ALTER TABLE t SWAP WITH s``, Hive's and
Oracle's ``ALTER TABLE t EXCHANGE PARTITION (...) WITH TABLE s``) each become a target and the
query whose rows (or, for LIKE, whose columns) it takes: ``SELECT * FROM s``. A swap moves
rows both ways; the lineage draws the table named first as the one written, as a statement
has one target. A file
path is a node of its own, named as written (``s3://b/p``), like Spark's ``parquet.`s3://b/p```.

>>> import sqlglot
>>> kind, target, query = copy_query(sqlglot.parse_one("COPY sales FROM 's3://b/in/'"), "")
>>> kind, target, query.sql()
('copy', 'sales', 'SELECT * FROM "s3://b/in/"')
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from medallion_assets.lineage.script import SqlError, first_line, table_name


def copy_query(expression: exp.Expr, dialect: str) -> tuple[str, str, exp.Query] | None:
    """(kind, target, the query whose rows it copies) of a statement that copies whole, else
    None. ``kind``: ``copy`` (COPY, UNLOAD), ``clone``, ``rename``, ``swap``,
    ``exchange_partition`` or ``create_like`` (the query gives the columns, no rows)."""
    if isinstance(expression, exp.Copy):
        return _copy(expression)
    if isinstance(expression, exp.Command) and expression.name.upper() == "UNLOAD":
        return _unload(expression.text("expression"), dialect)
    if isinstance(expression, exp.Command) and expression.name.upper() == "ALTER":
        return _exchange(expression.text("expression"), dialect)
    if isinstance(expression, exp.Alter) and isinstance(expression.this, exp.Table):
        actions = expression.args.get("actions") or []
        renames = [a for a in actions if isinstance(a, exp.AlterRename)]
        if renames and isinstance(renames[0].this, exp.Table):
            return (
                "rename",
                table_name(_beside(renames[0].this, expression.this)),
                _rows_of([expression.this]),
            )
        swaps = [a for a in actions if isinstance(a, exp.SwapTable)]
        if swaps and isinstance(swaps[0].this, exp.Table):
            return "swap", table_name(expression.this), _rows_of([swaps[0].this])
    if isinstance(expression, exp.Create):
        properties = expression.args.get("properties")
        like = next(
            (
                p.this
                for p in (properties.expressions if isinstance(properties, exp.Properties) else [])
                if isinstance(p, exp.LikeProperty)
            ),
            None,
        )
        clone = expression.args.get("clone")
        source = clone.this if isinstance(clone, exp.Clone) else like
        if isinstance(source, exp.Table) and isinstance(expression.this, exp.Table):
            kind = "clone" if clone is not None else "create_like"
            return kind, table_name(expression.this), _rows_of([source])
    return None


def _beside(new: exp.Table, old: exp.Table) -> exp.Table:
    """``RENAME TO t3`` keeps the renamed table's schema (and catalog) when ``t3`` names none."""
    if new.args.get("db") or not old.args.get("db"):
        return new
    placed = new.copy()
    placed.set("db", old.args["db"].copy())
    if old.args.get("catalog"):
        placed.set("catalog", old.args["catalog"].copy())
    return placed


def path_target(insert: exp.Insert) -> str | None:
    """The folder ``INSERT OVERWRITE [LOCAL] DIRECTORY 'path' SELECT ...`` writes, else None."""
    directory = insert.this
    if isinstance(directory, exp.Directory) and isinstance(directory.this, exp.Literal):
        return str(directory.this.name)
    return None


def _copy(expression: exp.Copy) -> tuple[str, str, exp.Query]:
    this = expression.this
    files = [_relation(f) for f in expression.args.get("files") or []]
    if not expression.args.get("kind"):  # PostgreSQL's COPY t TO 'file': the table is read
        if isinstance(this, exp.Table):
            return "copy", _name(files[0]) if files else "stdout", _rows_of([this])
        query = this.this if isinstance(this, exp.Subquery) else this
        if isinstance(query, exp.Query):
            return "copy", _name(files[0]) if files else "stdout", query
        raise SqlError("COPY ... TO needs a table or a query to copy")
    if not isinstance(this, exp.Table) or not files:
        raise SqlError("COPY needs a target table and the files or table it loads")
    queries = [f.this for f in expression.args["files"] if isinstance(f, exp.Subquery)]
    if len(queries) == 1 and isinstance(queries[0], exp.Query):  # COPY INTO t FROM (SELECT ...)
        return "copy", _name(this), queries[0]
    return "copy", _name(this), _rows_of(files)


_UNLOAD = re.compile(r"^\s*\(\s*'((?:[^']|'')*)'\s*\)\s*to\s+'([^']+)'", re.I | re.S)


def _unload(text: str, dialect: str) -> tuple[str, str, exp.Query]:
    match = _UNLOAD.match(text)
    if match is None:
        raise SqlError("UNLOAD needs ('<query>') TO '<path>'")
    try:
        query = sqlglot.parse_one(match.group(1).replace("''", "'"), read=dialect)
    except SqlglotError as error:
        raise SqlError(f"the query of UNLOAD does not parse: {first_line(error)}") from None
    if not isinstance(query, exp.Query):
        raise SqlError("UNLOAD's query is not a SELECT")
    return "copy", match.group(2), query


_EXCHANGE = re.compile(
    r"^\s*table\s+(?P<target>[^\s(]+)\s+exchange\s+partition\b.*?\bwith\s+table\s+"
    r"(?P<source>[^\s;]+)",
    re.I | re.S,
)


def _exchange(text: str, dialect: str) -> tuple[str, str, exp.Query] | None:
    """``ALTER TABLE t EXCHANGE PARTITION (...) WITH TABLE s`` (sqlglot keeps it as text): the
    partition's rows move from ``s`` into ``t``."""
    match = _EXCHANGE.match(text)
    if match is None:
        return None
    try:
        target, source = (
            exp.to_table(match.group(name), dialect=dialect) for name in ("target", "source")
        )
    except SqlglotError:
        return None
    return "exchange_partition", table_name(target), _rows_of([source])


def _relation(node: exp.Expr) -> exp.Table:
    """A COPY's table, or its file (a string, or Snowflake's ``'s3://…'`` as a table) as a
    table named by the path."""
    if isinstance(node, exp.Table) and not isinstance(node.this, exp.Literal):
        return node
    return exp.Table(this=exp.to_identifier(node.name, quoted=True))


def _name(table: exp.Table) -> str:
    if isinstance(table.this, exp.Literal):
        return str(table.this.name)
    return table_name(table)


def _rows_of(tables: list[exp.Table]) -> exp.Query:
    """``SELECT * FROM`` each table (or file), as one UNION ALL."""
    selects = [exp.select("*").from_(t.copy()) for t in tables]
    query: exp.Query = selects[0]
    for select in selects[1:]:
        query = exp.union(query, select, distinct=False)
    return query
