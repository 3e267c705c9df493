"""Statements of a scanned script that move no data, so lineage passes over them.

DROP, TRUNCATE, DELETE, ALTER (but for ``ALTER VIEW v AS SELECT``, RENAME, SWAP and EXCHANGE
PARTITION, which are traced), GRANT, transactions, comments, a lasting function, ``CREATE
TABLE t (a INT, ...)`` (its columns name a later ``INSERT``'s by position), and what a session
asks of its engine without writing: ``DESC``, ``SHOW``, ``EXPLAIN``, ``SET TIME ZONE``,
``RESET``, ``CACHE TABLE t``, ``REFRESH``, ``ANALYZE``, ``MSCK REPAIR``, ``OPTIMIZE``,
``VACUUM``, ``ADD JAR``, a ``DECLARE`` sqlglot cannot read, T-SQL's ``PRINT`` and ``DBCC``.
"""

from __future__ import annotations

import re

from sqlglot import exp

from medallion_assets.lineage.copies import copy_query
from medallion_assets.lineage.script import preamble_part, table_name

# The first words of statements sqlglot keeps unparsed that only ask something of the engine.
SESSION_WORDS = frozenset(
    {"SHOW", "EXPLAIN", "SET", "RESET", "MSCK", "ADD", "LIST", "CLEAR", "OPTIMIZE", "VACUUM",
     "FSCK", "REPAIR", "PRINT", "DBCC", "DESC", "DESCRIBE", "KILL", "CHECKPOINT", "LOCK",
     "UNLOCK", "REINDEX", "DISCARD", "LISTEN", "NOTIFY", "UNLISTEN", "DECLARE"}
)  # fmt: skip

# A file that may move no data at all: comments only, a function, a DROP, an ALTER, a DELETE,
# a session's own statement (DESC, SHOW, SET ...).
NO_DATA_START = re.compile(
    r"^\s*(?:(?:--|#)[^\n]*(?:\n|$)\s*|/\*.*?\*/\s*)*(?:$|drop\b|truncate\b|grant\b|alter\b|delete\b|"
    r"revoke\b|create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?(?:function|procedure)\b|"
    rf"(?:{'|'.join(SESSION_WORDS)}|cache|uncache|refresh|analyze|use|comment)\b)",
    re.I | re.S,
)

_NO_DATA = (
    exp.Drop, exp.TruncateTable, exp.Delete, exp.Alter, exp.Grant, exp.Transaction, exp.Commit,
    exp.Rollback, exp.Analyze, exp.Describe, exp.Refresh, exp.Uncache, exp.Comment,
)  # fmt: skip

# What ``CREATE <kind> x`` without a query makes holds no rows yet (a table declares columns).
_NO_DATA_CREATES = frozenset(
    {"TABLE", "SCHEMA", "DATABASE", "INDEX", "EXTERNAL TABLE", "STAGE", "SEQUENCE",
     "FILE FORMAT", "WAREHOUSE"}
)  # fmt: skip


def moves_no_data(statement: exp.Expr, declared: dict[str, dict[str, str]], dialect: str) -> bool:
    """Whether lineage passes over ``statement``; the columns of a ``CREATE TABLE t (a INT)``
    go into ``declared`` (table -> column -> type)."""
    if copy_query(statement, dialect) is not None:  # RENAME, CLONE and LIKE move or copy
        return False
    if isinstance(statement, _NO_DATA):
        return True
    if isinstance(statement, exp.Command):
        return statement.name.split(" ")[0].upper() in SESSION_WORDS
    if isinstance(statement, exp.Cache):
        return statement.expression is None  # CACHE TABLE t AS SELECT names a new relation
    if not isinstance(statement, exp.Create):
        return False
    kind = str(statement.args.get("kind") or "").upper()
    if kind == "FUNCTION" and preamble_part(statement) is None:
        return True  # a lasting function: a temporary one is the preamble of later writes
    if statement.expression is not None:
        return False
    if kind in ("TABLE", "EXTERNAL TABLE") and isinstance(statement.this, exp.Schema):
        table = statement.this.this
        columns = {
            c.name.lower(): c.args["kind"].sql(dialect=dialect) if c.args.get("kind") else "unknown"
            for c in statement.this.expressions
            if isinstance(c, exp.ColumnDef)
        }
        if isinstance(table, exp.Table) and columns:
            declared.setdefault(table_name(table), columns)
    return kind in _NO_DATA_CREATES
