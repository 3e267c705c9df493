"""What a scope of a query offers column lineage: its sources by name (enclosing scopes
included), the columns its joins take ``USING``, a derived table's column aliases, and a set
operation's branch that is one ``*`` over a table of unknown schema."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from medallion_assets.lineage.origins import Origin, OutputColumn
from medallion_assets.lineage.statement import UNNEST_ALIAS, SqlError, table_name


def star_of(branch: list[OutputColumn]) -> str | None:
    """The table a branch's lone unexpanded ``*`` reads, when it names one."""
    return branch[0].star_table if len(branch) == 1 and branch[0].name == "*" else None


def star_as(branch: list[OutputColumn], named: list[OutputColumn]) -> list[OutputColumn]:
    """A set operation's branch holding one ``*`` of unknown columns (a table of unknown
    schema, the fields of an UNNEST's elements) beside columns it lists, as the columns another
    branch names at the positions the ``*`` fills (the operation matches them by position):
    ``tab.*`` becomes ``tab.<name>``; any other ``*`` keeps its sources and why it is unknown."""
    stars = [i for i, column in enumerate(branch) if column.name == "*"]
    if len(stars) != 1 or len(named) < len(branch) - 1:
        return branch
    at = stars[0]
    star, after = branch[at], branch[at + 1 :]
    if star.star_table is None and len(branch) == 1:
        return branch  # nothing listed beside it: its columns are not known (the caller says)

    def filled(name: str) -> OutputColumn:
        if star.star_table is None:
            return OutputColumn(name, star.origin)
        return OutputColumn(name, Origin(frozenset({f"{star.star_table}.{name}"}), "direct"))

    middle = [filled(column.name) for column in named[at : len(named) - len(after)]]
    return [*branch[:at], *middle, *after]


def using_columns(scope: Scope) -> set[str]:
    """The columns the joins of ``scope``'s SELECT join ``USING``."""
    joins = scope.expression.args.get("joins") or []
    return {c.name for join in joins for c in join.args.get("using") or []}


def using_relations(scope: Scope, name: str) -> list[exp.Table | Scope]:
    """The sources ``JOIN ... USING (name)`` joins in ``scope``'s SELECT: its FROM relation
    and each relation joined using ``name`` (none when no join uses it). Every one of them
    has the column, whatever their schemas."""
    joins = scope.expression.args.get("joins") or []
    using = [j.this for j in joins if name in {c.name for c in j.args.get("using") or []}]
    first = scope.expression.args.get("from_")
    labels = [r.alias_or_name for r in ([first.this] if first else []) + using] if using else []
    selected = scope.selected_sources
    return [selected[label][1] for label in labels if label in selected]


def projection_parts(projection: exp.Expr) -> tuple[exp.Expr, list[str]]:
    """A select item's value and the columns it makes: ``explode(m) AS (k, v)`` two, an
    unaliased expression one named by its SQL text as Spark names it (``sum(sales)``)."""
    if isinstance(projection, exp.Aliases):
        return projection.this, [alias.name for alias in projection.expressions]
    return projection.unalias(), [projection.alias_or_name or projection.sql("spark").lower()]


def check_widths(scope: Scope, branches: list[list[OutputColumn]]) -> None:
    """A set operation's branches select as many columns each (but a ``*`` of unknown ones)."""
    widths = [len(b) for b in branches]
    if len(set(widths)) > 1 and not any(o.name == "*" for b in branches for o in b):
        operation = type(scope.expression).__name__.upper()
        raise SqlError(
            f"has a {operation} whose branches select different numbers of columns "
            f"({', '.join(map(str, widths))}): every branch must select the same columns "
            "in the same order"
        )


def joined_star(per_source: list[list[OutputColumn]], using: set[str]) -> list[OutputColumn]:
    """The columns of ``*`` over its sources' columns: with ``JOIN ... USING (k)`` each ``k``
    once, first, from either side."""
    merged: dict[str, Origin] = {}
    for columns in per_source:
        for column in columns:
            if column.name in using:
                merged[column.name] = merged.get(column.name, Origin()).merge(column.origin)
    rest = [c for columns in per_source for c in columns if c.name not in using]
    return [OutputColumn(name, origin) for name, origin in merged.items()] + rest


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


def column_source(scope: Scope, column: exp.Column) -> exp.Table | Scope | None:
    """The source a qualified column names: its qualifier's (``source_named``), else the table
    written with its full name (at least ``db.name``) under whatever alias: ``db.t.x`` of
    ``FROM db.t AS t1`` reads ``db.t``'s ``x``, not a field of a column ``db``."""
    source = source_named(scope, column.table)
    if source is not None:
        return source
    parts = [part.name for part in column.parts][:-1]
    if len(parts) < 2:
        return None
    current: Scope | None = scope
    while current is not None:
        for source in current.sources.values():
            if isinstance(source, exp.Table):
                written = [p.name for p in source.parts]
                if written[-len(parts) :] == parts:
                    return source
        current = enclosing(current)
    return None


def enclosing(scope: Scope) -> Scope | None:
    return scope.parent if scope.is_subquery or scope.is_udtf else None


def apply_alias_columns(scope: Scope, outputs: list[OutputColumn]) -> list[OutputColumn]:
    """``(SELECT ...) AS d(x, y)`` and ``WITH t(x, y) AS (...)`` rename outputs by position
    (a set operation's first branch too: a recursive CTE's self-reference reads it)."""
    node = scope.expression
    while isinstance(node.parent, exp.SetOperation) and node.parent.this is node:
        node = node.parent
    parent = node.parent
    alias = parent.args.get("alias") if isinstance(parent, (exp.Subquery, exp.CTE)) else None
    names = [c.name for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
    return renamed(names, outputs)


def renamed(names: list[str], outputs: list[OutputColumn]) -> list[OutputColumn]:
    """``outputs`` renamed by position (as they are when a ``*`` leaves positions unknown)."""
    if not names or any(o.name == "*" for o in outputs):
        return outputs
    return [OutputColumn(n, o.origin) for n, o in zip(names, outputs, strict=False)] + outputs[
        len(names) :
    ]


def source_label(source: exp.Table | Scope) -> str:
    if isinstance(source, exp.Table):
        return table_name(source)
    return "a subquery"


def unknown_fields(source: Scope, outputs: list[OutputColumn]) -> bool:
    """An UNNEST without an alias whose elements' fields are not known (BigQuery names a
    struct element's fields as columns): ``outputs`` are its one element column."""
    unnest = source.expression
    internal = isinstance(unnest, exp.Unnest) and unnest.alias.startswith(UNNEST_ALIAS)
    return internal and [o.name for o in outputs] == ["unnest"]
