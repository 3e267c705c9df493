"""What a scope of a query offers column lineage: its sources by name (enclosing scopes
included), the columns its joins take ``USING``, a derived table's column aliases, and a set
operation's branch that is one ``*`` over a table of unknown schema."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from medallion_assets.lineage.origins import Origin, OutputColumn
from medallion_assets.lineage.statement import table_name


def star_of(branch: list[OutputColumn]) -> str | None:
    """The table a branch's lone unexpanded ``*`` reads, when it names one."""
    return branch[0].star_table if len(branch) == 1 and branch[0].name == "*" else None


def star_as(branch: list[OutputColumn], named: list[OutputColumn]) -> list[OutputColumn]:
    """A set operation's branch that is one ``*`` over a table of unknown schema, as the
    columns another branch names (the operation matches them by position)."""
    if len(branch) != 1 or branch[0].name != "*" or branch[0].star_table is None:
        return branch
    table = branch[0].star_table
    return [OutputColumn(o.name, Origin(frozenset({f"{table}.{o.name}"}), "direct")) for o in named]


def using_columns(scope: Scope) -> set[str]:
    """The columns the joins of ``scope``'s SELECT join ``USING``."""
    joins = scope.expression.args.get("joins") or []
    return {c.name for join in joins for c in join.args.get("using") or []}


def source_named(scope: Scope, name: str) -> exp.Table | Scope | None:
    """The source ``name`` of ``scope``, else of the scopes enclosing it (a correlated
    reference)."""
    current: Scope | None = scope
    while current is not None:
        source = current.sources.get(name)
        if source is not None:
            return source
        current = enclosing(current)
    return None


def enclosing(scope: Scope) -> Scope | None:
    return scope.parent if scope.is_subquery or scope.is_udtf else None


def apply_alias_columns(scope: Scope, outputs: list[OutputColumn]) -> list[OutputColumn]:
    """``(SELECT ...) AS d(x, y)`` and ``WITH t(x, y) AS (...)`` rename outputs by position."""
    parent = scope.expression.parent
    alias = parent.args.get("alias") if isinstance(parent, (exp.Subquery, exp.CTE)) else None
    names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    if not names or any(o.name == "*" for o in outputs):
        return outputs
    renamed = [OutputColumn(n, o.origin) for n, o in zip(names, outputs, strict=False)]
    return renamed + outputs[len(names) :]


def source_label(source: exp.Table | Scope) -> str:
    if isinstance(source, exp.Table):
        return table_name(source)
    return "a subquery"
