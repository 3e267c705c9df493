"""A table's SQL reduced to what a change of it can touch: one fingerprint per output column
(the expression the outermost SELECT computes it with) and one for its rows (everything else:
the CTEs, FROM, joins, WHERE, GROUP BY, DISTINCT, ORDER BY, LIMIT). Two versions of a file
whose fingerprints agree compute the same rows; a column whose fingerprint differs may hold
other values. Formatting and comments do not count.

>>> a = sql_shape("SELECT id, upper(n) AS n FROM t", "spark", "s.x")
>>> b = sql_shape("select id,  UPPER(n) as n, 1 AS one from t -- new", "spark", "s.x")
>>> a.rows == b.rows, a.columns["n"] == b.columns["n"], sorted(b.columns)
(True, True, ['id', 'n', 'one'])
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlglot import exp

from medallion_assets.lineage.statement import SqlError, Statement, parse_statement


@dataclass(frozen=True)
class Shape:
    """The fingerprints of a table's SQL; ``columns`` empty when they are not known apart (a
    MERGE, a set operation): then every column changes with ``rows``."""

    rows: str
    columns: Mapping[str, str] = field(default_factory=dict)

    def as_json(self) -> str:
        return json.dumps({"rows": self.rows, "columns": dict(self.columns)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Shape | None:
        """The shape recorded as ``as_json``, or None (not recorded, unreadable)."""
        try:
            found = json.loads(text)
            return cls(str(found["rows"]), {str(k): str(v) for k, v in found["columns"].items()})
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def query_shape(statement: Statement) -> Shape:
    query = statement.query
    if not isinstance(query, exp.Select) or any(
        isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star)
        for p in query.expressions
    ):
        return Shape(_fingerprint(statement.expression))
    rest = query.copy()
    rest.set("expressions", [exp.Star()])
    columns = {p.alias_or_name: _fingerprint(p.unalias()) for p in query.expressions}
    return Shape(_fingerprint(rest), columns)


def sql_shape(sql: str, dialect: str, target: str) -> Shape:
    """The shape of a file's SQL (of its text, when it does not parse)."""
    try:
        return query_shape(parse_statement(sql, dialect, target))
    except SqlError:
        return Shape(hashlib.sha256(sql.encode("utf-8")).hexdigest()[:12])


def _fingerprint(node: exp.Expr) -> str:
    text = node.sql(dialect="spark", comments=False, normalize=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
