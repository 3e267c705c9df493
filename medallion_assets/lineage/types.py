"""The type of an expression, derived from the types of the columns it reads: what a computed
column is, so that checks can tell a string from a number before Spark runs.

sqlglot's type annotation (Spark's functions: ``upper`` is a string, ``to_date`` a date,
``datediff`` an int, ``x IS NULL`` a boolean) runs on a copy of the expression whose columns
are typed NULLs. Only what is certain is kept: a type sqlglot cannot derive is None ("unknown",
never guessed), a decimal computed from others is ``decimal`` (Spark widens its precision by
rules sqlglot does not follow), and a small integer no input has is ``int`` (Spark's date
parts are ints).

>>> import sqlglot
>>> e = sqlglot.parse_one("upper(trim(country))", read="spark")
>>> infer_type(e, {id(e.find(exp.Column)): "string"})
'string'
>>> e = sqlglot.parse_one("amount * rate", read="spark")
>>> infer_type(e, {id(c): "decimal(18,2)" for c in e.find_all(exp.Column)})
'decimal'
>>> infer_type(sqlglot.parse_one("amount + 1", read="spark"), {})
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.annotate_types import annotate_types

from medallion_assets.lineage.origins import is_query

_SMALL = re.compile(r"(tinyint|smallint)\b")


def infer_type(expression: exp.Expr, column_types: Mapping[int, str | None]) -> str | None:
    """The Spark type of ``expression`` given the types of its columns (by ``id`` of each
    ``exp.Column`` node), lower-case; None when it is not certain."""
    columns = _columns(expression)
    copy = expression.copy()
    inputs: list[str] = []
    for original, copied in zip(columns, _columns(copy), strict=True):
        known = column_types.get(id(original))
        typed = _typed_null(known) if known else None
        if typed is not None:
            inputs.append(known or "")
            copied.replace(typed)
    inner = copy.walk(prune=lambda n: n is not copy and is_query(n))
    for query in [n for n in inner if n is not copy and is_query(n)]:
        query.replace(exp.column("unknown_value"))  # a scalar subquery's type: not derived here
    try:
        annotated = annotate_types(copy, dialect="spark")
    except (SqlglotError, ValueError, TypeError, KeyError, AttributeError):
        return None
    found = annotated.type
    if found is None or found.this in (exp.DType.UNKNOWN, exp.DType.NULL):
        return None
    written = found.sql("spark").lower()
    if found.this == exp.DType.DECIMAL and not isinstance(expression, exp.Cast):
        return "decimal"
    small = _SMALL.match(written)
    if small and not any(_SMALL.match(t.lower()) for t in inputs):
        return "int"
    return written


def _columns(expression: exp.Expr) -> list[exp.Column]:
    """The columns ``expression`` reads itself (not those of a subquery in it), in one order
    for the expression and its copy."""
    return [
        node
        for node in expression.walk(bfs=False, prune=lambda n: n is not expression and is_query(n))
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star)
    ]


def _typed_null(kind: str) -> exp.Expr | None:
    try:
        return exp.Cast(this=exp.Null(), to=exp.DataType.build(kind, dialect="spark"))
    except (SqlglotError, ValueError):
        return None
