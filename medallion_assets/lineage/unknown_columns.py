"""Columns a query reads that the table it reads them from does not have: caught before Spark,
with the line and column in the file and the nearest names the table does have.

Only what is certain is reported. A qualified column (``o.amount``) is checked when ``o`` (of
its query, or of a query it is a subquery of) is a table whose columns are known (declared in
sources.yaml, or derived through the SQL of the table that makes it) or a CTE or subquery whose
output names are all known (no ``*``). An unqualified column is checked when every table it
could come from is known (those its SELECT reads and, for a subquery, those of the queries
around it; no lateral view), when it is not one of the SELECT's own aliases (Spark lets a
later expression, ORDER BY and GROUP BY use them) nor a lambda's variable. Anything else (a struct
field, a table of unknown schema) is left to Spark.

An unqualified column is *ambiguous* when two tables of the query that resolves it (the innermost
one, from its own query outwards, as Spark resolves) both have it: Spark refuses the query
(``AMBIGUOUS_REFERENCE``). Not said when a ``USING`` or ``NATURAL`` join merges the name, in a
join's ``ON`` (it sees only the tables joined so far), for a SELECT's own alias, nor in GROUP BY,
HAVING or ORDER BY for a name the SELECT outputs.
``catalog validate`` reports each with the file and line (``catalog/loader.py``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, build_scope

from medallion_assets.lineage.statement import table_name

Schema = Mapping[str, Mapping[str, str]]  # table -> column -> type

# Columns every Iceberg table answers without declaring them (its metadata columns).
ICEBERG_METADATA_COLUMNS = frozenset(
    {
        "_file",
        "_pos",
        "_spec_id",
        "_partition",
        "_deleted",
        "_change_type",
        "_change_ordinal",
        "_commit_snapshot_id",
    }
)


@dataclass(frozen=True)
class UnknownColumn:
    """``reference`` (as written, e.g. ``o.amount_usd``) names no column of ``table``; or, when
    ``ambiguous``, a column several of the tables it may come from have (``table``: "a, b";
    ``nearest``: the qualified names to write instead)."""

    reference: str
    table: str  # layer.name, the CTE or subquery's alias, or several: "a, b"
    line: int | None  # in the text parsed, 1-based
    column: int | None
    nearest: tuple[str, ...]  # the table's closest column names, best first
    ambiguous: bool = False

    def message(self) -> str:
        where = f"column {self.column}: " if self.column else ""
        if self.ambiguous:
            *others, last = self.table.split(", ")
            tables = f"{', '.join(others)} and {last} {'both' if len(others) == 1 else 'all'}"
            return f"{where}{self.reference} is ambiguous: {tables} have it"
        if ", " in self.table:  # an unqualified column, several tables read
            return f"{where}{self.reference}: none of {self.table} has a column {self.name!r}"
        return f"{where}{self.reference}: {self.table} has no column {self.name!r}"

    def fix(self) -> str:
        if self.ambiguous:
            return "qualify it: " + " or ".join(self.nearest)
        if self.nearest:
            return "did you mean " + " or ".join(repr(n) for n in self.nearest) + "?"
        return f"use a column {self.table} has, or add it to what makes {self.table}"

    @property
    def name(self) -> str:
        return self.reference.rsplit(".", 1)[-1]

    def as_list(self) -> list[object]:
        found: list[object] = [self.reference, self.table, self.line, self.column, [*self.nearest]]
        return [*found, True] if self.ambiguous else found

    @classmethod
    def from_list(cls, item: list[object]) -> UnknownColumn:
        reference, table, line, column, nearest, *ambiguous = item
        return cls(
            str(reference),
            str(table),
            None if line is None else int(str(line)),
            None if column is None else int(str(column)),
            tuple(str(n) for n in nearest),  # type: ignore[attr-defined]
            bool(ambiguous and ambiguous[0]),
        )


def unknown_columns(query: exp.Expr, schema: Schema) -> tuple[UnknownColumn, ...]:
    """Every column ``query`` reads from a source that certainly lacks it.

    >>> import sqlglot
    >>> q = sqlglot.parse_one("SELECT o.id, o.amount_usd FROM silver.orders AS o")
    >>> orders = {"id": "int", "total_amount_usd": "double"}
    >>> for u in unknown_columns(q, {"silver.orders": orders}):
    ...     print(u.message()); print(u.fix())
    column 14: o.amount_usd: silver.orders has no column 'amount_usd'
    did you mean 'total_amount_usd'?
    """
    root = build_scope(query)
    if root is None:
        return ()
    found: list[UnknownColumn] = []
    selected = _Selected(schema)
    for scope in root.traverse():
        found.extend(_in_scope(scope, schema, selected))
    return tuple(sorted(found, key=lambda u: (u.line or 0, u.column or 0)))


class _Selected:
    """Each query's selected tables as (alias, what to call it, its column names or None when
    they are not all known), worked out once per query for all its columns."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.found: dict[int, list[tuple[str, str, set[str] | None]]] = {}

    def __call__(self, scope: Scope) -> list[tuple[str, str, set[str] | None]]:
        if id(scope) not in self.found:
            self.found[id(scope)] = [
                (str(alias).lower(), *_columns_of(source, str(alias).lower(), self.schema))
                for alias, (_, source) in scope.selected_sources.items()
            ]
        return self.found[id(scope)]


def _in_scope(scope: Scope, schema: Schema, selected: _Selected) -> Iterator[UnknownColumn]:
    select = scope.expression if isinstance(scope.expression, exp.Select) else None
    reachable = _reachable(scope, select, selected)
    aliases = _select_aliases(select)
    # Every column written in this SELECT itself, HAVING and ORDER BY included, none of a
    # nested query's (sqlglot's scope.columns leaves some out and adds others).
    if select is None:
        return
    for column in select.find_all(exp.Column):
        if column.find_ancestor(exp.Select) is not select:
            continue
        name = column.name.lower()
        if not name or isinstance(column.this, exp.Star) or column.args.get("db"):
            continue
        if name in ICEBERG_METADATA_COLUMNS:
            continue
        if _lambda_variable(column, name):
            continue
        qualifier = column.table.lower()
        if not qualifier and name not in aliases and not _after_select(column, select, name):
            clash = _ambiguous(scope, name, selected)
            if clash:
                yield _ambiguity(column.this, name, clash, tuple(f"{a}.{name}" for a, _ in clash))
                continue
        if qualifier:
            source = _qualified_source(scope, qualifier)
            if source is None:
                continue  # a struct's field, or a name nothing around it declares
            label, known = _columns_of(source, qualifier, schema)
        elif reachable is not None and name not in aliases:
            label, known = reachable
        else:
            continue
        if known is None or name in known:
            continue
        reference = f"{qualifier}.{name}" if qualifier else name
        first = column.args.get("table") if qualifier else column.this  # where it starts
        meta = first.meta if isinstance(first, exp.Expr) else {}
        yield UnknownColumn(
            reference,
            label,
            meta.get("line"),
            _start_column(meta),
            tuple(difflib.get_close_matches(name, sorted(known), n=2, cutoff=0.7)),
        )


def _ambiguity(
    node: object, name: str, clash: list[tuple[str, str]], qualified: tuple[str, ...]
) -> UnknownColumn:
    meta = node.meta if isinstance(node, exp.Expr) else {}
    tables = ", ".join(dict.fromkeys(label for _, label in clash))
    return UnknownColumn(name, tables, meta.get("line"), _start_column(meta), qualified, True)


def _ambiguous(scope: Scope, name: str, selected: _Selected) -> list[tuple[str, str]]:
    """The (alias, table) pairs an unqualified ``name`` could equally mean, when there are
    several: the innermost query that has the name resolves it, as Spark does; nothing when
    that is not certain (a source of unknown columns first, a lateral view, a merged join)."""
    current: Scope | None = scope
    while current is not None:
        select = current.expression
        if not isinstance(select, exp.Select) or select.args.get("laterals"):
            return []
        having: list[tuple[str, str]] = []
        unsure = False
        for alias, label, known in selected(current):
            if known is None:
                unsure = True
            elif name in known:
                having.append((alias, label))
        if len(having) > 1 and not _merged_by_join(select, name):
            return having
        if having or unsure:
            return []
        current = current.parent if current.is_subquery else None
    return []


def _merged_by_join(select: exp.Select, name: str) -> bool:
    """Whether a join of ``select`` merges ``name`` into one column (USING, NATURAL)."""
    for join in select.args.get("joins") or ():
        if join.args.get("method"):  # NATURAL
            return True
        if any(u.name.lower() == name for u in join.args.get("using") or ()):
            return True
    return False


def _after_select(column: exp.Column, select: exp.Select, name: str) -> bool:
    """Whether ``column`` is in a join's ON (which sees only the tables joined so far) or names
    one of the SELECT's outputs from GROUP BY, HAVING or ORDER BY (which Spark may resolve to
    that output): places an ambiguity is not certain."""
    clause = column.find_ancestor(exp.Join, exp.Group, exp.Having, exp.Order, exp.Select)
    if isinstance(clause, exp.Join):
        return clause.parent is select
    if isinstance(clause, (exp.Group, exp.Having, exp.Order)):
        return name in {e.alias_or_name.lower() for e in select.expressions}
    return False


def _start_column(meta: Mapping[str, object]) -> int | None:
    """sqlglot records where an identifier ends; its first character is what an editor wants."""
    end, start = meta.get("col"), meta.get("start")
    if not isinstance(end, int):
        return None
    end_char, start_char = meta.get("end"), start
    if isinstance(end_char, int) and isinstance(start_char, int):
        return end - (end_char - start_char)
    return end


def _reachable(
    scope: Scope, select: exp.Select | None, selected: _Selected
) -> tuple[str, set[str]] | None:
    """What an unqualified column of ``select`` may name: the columns of every table it reads,
    and of every query it is nested in as a subquery (which may read the outer query's), with
    what to call them; None when any of those is not known whole (a table of unknown schema,
    a ``*``, a lateral view, a table function)."""
    if select is None:
        return None
    chain = [scope]
    while chain[-1].is_subquery and chain[-1].parent is not None:
        chain.append(chain[-1].parent)
    labels: list[str] = []
    names: set[str] = set()
    for current in chain:
        expression = current.expression
        if not isinstance(expression, exp.Select) or expression.args.get("laterals"):
            return None
        for _, label, known in selected(current):
            if known is None:
                return None
            labels.append(label)
            names |= known
    if not labels:
        return None
    return ", ".join(dict.fromkeys(labels)), names


def _qualified_source(scope: Scope, qualifier: str) -> object | None:
    """What ``qualifier`` names: a source of this query, or of a query it is a subquery of."""
    current: Scope | None = scope
    while current is not None:
        for alias, source in current.sources.items():
            if str(alias).lower() == qualifier:
                return source
        current = current.parent if current.is_subquery else None
    return None


def _select_aliases(select: exp.Select | None) -> set[str]:
    if select is None:
        return set()
    return {e.alias.lower() for e in select.expressions if isinstance(e, exp.Alias)}


def _lambda_variable(column: exp.Column, name: str) -> bool:
    found = column.parent
    while found is not None:
        if isinstance(found, exp.Lambda) and any(
            isinstance(v, exp.Expr) and v.name.lower() == name for v in found.expressions
        ):
            return True
        found = found.parent
    return False


def _columns_of(source: object, alias: str, schema: Schema) -> tuple[str, set[str] | None]:
    """(What to call the source, its column names), None when they are not all known."""
    if isinstance(source, exp.Table):
        if source.args.get("pivots"):
            return table_name(source), None  # PIVOT / UNPIVOT make other columns
        table = table_name(source)
        known = schema.get(table)
        return table, None if known is None else {c.lower() for c in known}
    if isinstance(source, Scope):
        cte = source.expression.parent
        if cte is not None and cte.args.get("pivots"):
            return alias, None
        name = cte.alias if isinstance(cte, exp.CTE) and cte.alias else alias
        return name.lower(), _scope_outputs(source)
    return alias, None


def _scope_outputs(scope: Scope) -> set[str] | None:
    expression = scope.expression
    alias = expression.parent.args.get("alias") if expression.parent is not None else None
    if isinstance(alias, exp.TableAlias) and alias.columns:
        return {c.name.lower() for c in alias.columns}
    while isinstance(expression, exp.SetOperation):
        expression = expression.left  # a union's columns are named by its first branch
    if not isinstance(expression, exp.Select):
        return None
    names = set()
    for projection in expression.expressions:
        if isinstance(projection, exp.Star) or (
            isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
        ):
            return None
        name = projection.alias_or_name
        if not name:
            return None
        names.add(name.lower())
    return names
