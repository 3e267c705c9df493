"""What a column of a query copies unchanged: followed through CTE and derived-table
projections, while each is a plain (maybe renamed) column, to a base table's column; None
wherever that is not certain (an expression, an ambiguous name, a ``*`` of unknown columns).

>>> import sqlglot
>>> from sqlglot.optimizer.scope import build_scope
>>> query = sqlglot.parse_one("WITH c AS (SELECT id AS k, a + 1 AS b FROM s.t) SELECT * FROM c")
>>> root = build_scope(query)
>>> PlainCopies(root, {}).through(root, "k"), PlainCopies(root, {}).through(root, "b")
('s.t.id', None)
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from medallion_assets.lineage.columns import Schema
from medallion_assets.lineage.relations import is_table_function
from medallion_assets.lineage.statement import table_name

Source = exp.Table | Scope


class PlainCopies:
    """What columns of a query's scopes copy: a column followed through CTE and derived-table
    projections, while each is a plain (maybe renamed) column, to a base table's column. None
    wherever that is not certain (an expression, an ambiguous name, a ``*`` of unknown columns)."""

    def __init__(self, root: Scope, schema: Schema):
        self.root = root
        self.schema = schema

    def copied(self, scope: Scope, node: exp.Expr) -> str | None:
        """The "table.column" that ``node``, an expression of ``scope``, copies unchanged."""
        node = node.unalias()
        while isinstance(node, exp.Paren):
            node = node.this
        if not isinstance(node, exp.Column) or isinstance(node.this, exp.Star):
            return None
        if not node.table:
            sources = self.candidates(scope, node.name)
            return self.through(sources[0], node.name) if len(sources) == 1 else None
        found = scope.selected_sources.get(node.table)
        source = found[1] if found else None
        if node.args.get("db") and not (isinstance(source, exp.Table) and source.db == node.db):
            return None  # a struct's field (``o.address.city``), not a column
        return self.through(source, node.name) if source is not None else None

    def candidates(self, scope: Scope, name: str) -> list[Source]:
        """The sources of ``scope`` an unqualified ``name`` may be a column of: the one that
        has it (a valid query names no column two sources have), else those of unknown columns."""
        definite, unknown = [], []
        for _, source in scope.selected_sources.values():
            names = self.columns_of(source)
            if names is None:
                unknown.append(source)
            elif name in names:
                definite.append(source)
        return definite or unknown

    def columns_of(self, source: Source) -> list[str] | None:
        if isinstance(source, Scope):
            return self.names(source)
        known = None if is_table_function(source) else self.schema.get(table_name(source))
        return list(known) if known is not None else None

    def names(self, scope: Scope) -> list[str] | None:
        """A scope's output column names, None when a ``*`` leaves them unknown."""
        expression, renamed = scope.expression, _alias_columns(scope)
        if isinstance(expression, exp.SetOperation):
            return renamed or self.names(scope.set_operation_scopes[0])
        if not isinstance(expression, exp.Select):
            return renamed or None  # LATERAL VIEW f(x) t AS a, b: the names it gives
        if any(_is_star(p) for p in expression.expressions):
            return None
        own = [p.alias_or_name for p in expression.expressions]
        return renamed + own[len(renamed) :]

    def through(self, source: Source, name: str) -> str | None:
        """The "table.column" that the column ``name`` of ``source`` copies."""
        if isinstance(source, exp.Table):
            known = self.schema.get(table_name(source))
            if is_table_function(source) or (known is not None and name not in known):
                return None
            return f"{table_name(source)}.{name}"
        names = self.names(source)
        if names is not None:
            return self.at(source, names.index(name)) if name in names else None
        select = source.expression
        if not isinstance(select, exp.Select) or _alias_columns(source):
            return None
        explicit = {p.alias_or_name: p for p in select.expressions if not _is_star(p)}
        if name in explicit:
            return self.copied(source, explicit[name])
        stars = [p for p in select.expressions if _is_star(p)]
        if len(stars) != 1:
            return None
        qualifier = stars[0].table if isinstance(stars[0], exp.Column) else None
        return self.copied(source, exp.column(name, table=qualifier or None))

    def at(self, scope: Scope, position: int) -> str | None:
        """What the output column at ``position`` of ``scope`` copies (the same in every branch
        of a set operation, which matches columns by position)."""
        expression = scope.expression
        if isinstance(expression, exp.SetOperation):
            if expression.args.get("by_name"):
                return None
            found = {self.at(branch, position) for branch in scope.set_operation_scopes}
            return found.pop() if len(found) == 1 else None
        if not isinstance(expression, exp.Select) or position >= len(expression.expressions):
            return None
        if any(_is_star(p) for p in expression.expressions):
            return None  # a star before it moves the column
        return self.copied(scope, expression.expressions[position])

    def grouped(self, scope: Scope, group: exp.Group) -> list[exp.Expr]:
        """A GROUP BY's expressions, an ordinal (``GROUP BY 1``) or an output alias no source
        can hold replaced by the projection it names."""
        select = scope.expression
        projections = {p.alias_or_name: p for p in select.expressions if isinstance(p, exp.Alias)}
        found = []
        for e in group.expressions:
            if (
                isinstance(e, exp.Literal)
                and e.is_int
                and 0 < int(e.name) <= len(select.expressions)
            ):
                e = select.expressions[int(e.name) - 1]
            elif isinstance(e, exp.Column) and not e.table and not self.candidates(scope, e.name):
                e = projections.get(e.name, e)
            found.append(e)
        return found


def _alias_columns(scope: Scope) -> list[str]:
    """The names ``WITH t(a, b) AS``, ``(...) AS d(a, b)`` or ``LATERAL VIEW f(x) t AS a, b``
    give a scope's columns, by position."""
    expression = scope.expression
    parent = expression.parent
    holder = parent if isinstance(parent, (exp.CTE, exp.Subquery)) else expression
    alias = holder.args.get("alias")
    return [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []


def _is_star(projection: exp.Expr) -> bool:
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
    )
