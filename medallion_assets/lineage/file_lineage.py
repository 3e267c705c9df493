"""Lineage of one statement: its target, its inputs and the origin of every target column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from medallion_assets.lineage.columns import Schema, query_columns
from medallion_assets.lineage.origins import Origin, OutputColumn
from medallion_assets.lineage.statement import Statement, table_name
from medallion_assets.lineage.unknown_columns import UnknownColumn

# Stands in for the MERGE target so that reads of the target's own columns can be told apart.
_MERGE_TARGET = "__merge_target__"


@dataclass(frozen=True)
class ColumnLineage:
    column: str  # "*" for a star that could not be expanded
    sources: tuple[str, ...]  # "table.column", sorted
    transform: str
    type: str | None = None
    unresolved: str | None = None


@dataclass(frozen=True)
class FileLineage:
    target: str
    kind: str
    sources: tuple[str, ...]
    columns: tuple[ColumnLineage, ...] | None  # None when column lineage was not asked for
    # Its columns are some of the target's (an INSERT naming the columns it fills).
    partial: bool = False
    # Columns it reads that the table it reads them from certainly lacks.
    unknown: tuple[UnknownColumn, ...] = ()

    def output_schema(self) -> dict[str, str] | None:
        """Column -> type of the target, or None when a star or a partial write leaves it
        unknown."""
        if self.columns is None or self.partial or any(c.column == "*" for c in self.columns):
            return None
        return {c.column: c.type or "unknown" for c in self.columns}

    def as_dict(self) -> dict[str, Any]:
        columns = None
        if self.columns is not None:
            columns = [
                [c.column, list(c.sources), c.transform, c.type, c.unresolved] for c in self.columns
            ]
        return {
            "target": self.target,
            "kind": self.kind,
            "sources": list(self.sources),
            "columns": columns,
            "partial": self.partial,
            "unknown": [u.as_list() for u in self.unknown],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FileLineage:
        columns = None
        if data["columns"] is not None:
            columns = tuple(
                ColumnLineage(name, tuple(sources), transform, col_type, unresolved)
                for name, sources, transform, col_type, unresolved in data["columns"]
            )
        sources = tuple(data["sources"])
        unknown = tuple(UnknownColumn.from_list(u) for u in data.get("unknown", ()))
        return cls(
            data["target"], data["kind"], sources, columns, bool(data.get("partial")), unknown
        )


def statement_columns(statement: Statement, schema: Schema) -> tuple[ColumnLineage, ...]:
    """Column lineage of a parsed statement, given the schemas of the tables it reads (and, for
    an INSERT without a column list, of its target: a warehouse inserts by position)."""
    if statement.kind == "merge":
        outputs = _merge_outputs(statement.expression, schema)
    elif statement.query is None:  # INSERT ... VALUES
        outputs = _values_outputs(statement, schema)
    else:
        outputs = query_columns(statement.query, schema)
        if statement.target_columns:
            outputs = _rename(outputs, statement.target_columns)
        else:
            outputs = _by_position(outputs, _target_schema(statement, schema))
    return tuple(_to_lineage(o) for o in _one_star(outputs))


def _target_schema(statement: Statement, schema: Schema) -> tuple[str, ...]:
    """The target's known columns an INSERT writes by position (static partitions left out)."""
    if not statement.kind.startswith("insert") or statement.target not in schema:
        return ()
    static: set[str] = set()
    partition = statement.expression.args.get("partition")
    if isinstance(partition, exp.Partition):
        static = {e.this.name for e in partition.expressions if isinstance(e, exp.EQ)}
    return tuple(c for c in schema[statement.target] if c not in static)


def _by_position(outputs: list[OutputColumn], names: tuple[str, ...]) -> list[OutputColumn]:
    if not names or len(names) != len(outputs) or any(o.name == "*" for o in outputs):
        return outputs  # unknown or mismatched: the select's own names
    return [OutputColumn(n, o.origin) for n, o in zip(names, outputs, strict=True)]


def _values_outputs(statement: Statement, schema: Schema) -> list[OutputColumn]:
    """INSERT ... VALUES: literals are constants; a scalar subquery keeps its sources."""
    names = statement.target_columns or _target_schema(statement, schema)
    origins = [Origin() for _ in names]
    values = statement.expression.expression
    rows = values.expressions if isinstance(values, exp.Values) else []
    for row in rows:
        if not isinstance(row, exp.Tuple) or row.find(exp.Query) is None:
            continue
        select = exp.select(*(e.copy() for e in row.expressions))
        for i, output in enumerate(query_columns(select, schema)[: len(names)]):
            origins[i] = origins[i].merge(output.origin)
    return [OutputColumn(n, o) for n, o in zip(names, origins, strict=True)]


def _one_star(outputs: list[OutputColumn]) -> list[OutputColumn]:
    """Every unexpanded ``*`` becomes one ``*`` column reading ``table.*`` of each table."""
    stars = [o for o in outputs if o.name == "*"]
    if len(stars) < 2:
        return outputs
    origin = stars[0].origin
    for star in stars[1:]:
        origin = origin.merge(star.origin)
    return [o for o in outputs if o.name != "*"] + [OutputColumn("*", origin)]


def _to_lineage(output: OutputColumn) -> ColumnLineage:
    origin = output.origin
    return ColumnLineage(
        output.name, tuple(sorted(origin.sources)), origin.transform, origin.type, origin.unresolved
    )


def _rename(outputs: list[OutputColumn], names: tuple[str, ...]) -> list[OutputColumn]:
    if any(o.name == "*" for o in outputs) or len(outputs) != len(names):
        reason = (
            f"the statement lists {len(names)} column(s) but the query yields {len(outputs)}"
            if not any(o.name == "*" for o in outputs)
            else "the statement's column list cannot be matched to an unexpanded '*'"
        )
        return [OutputColumn(n, Origin(unresolved=reason)) for n in names]
    return [OutputColumn(n, o.origin) for n, o in zip(names, outputs, strict=True)]


def _merge_outputs(merge: exp.Expr, schema: Schema) -> list[OutputColumn]:
    """MERGE: each assigned target column takes the union of every assignment to it."""
    using = merge.args["using"].copy()
    target = merge.this.copy()
    target_alias = target.alias_or_name
    target.set("this", exp.to_identifier(_MERGE_TARGET))
    target.set("db", None)
    target.set("catalog", None)
    target.set("alias", exp.TableAlias(this=exp.to_identifier(target_alias)))
    on = merge.args.get("on")
    select = exp.select().from_(using).join(target, on=on.copy() if on else None)
    assigned: list[tuple[str, exp.Expr]] = []
    for when in merge.args["whens"].expressions:
        assigned.extend(_assignments(when.args.get("then"), using.alias_or_name))
    if not assigned:
        return []
    select.set("expressions", [e.as_(f"__m{i}") for i, (_, e) in enumerate(assigned)])
    by_name: dict[str, Origin] = {}
    for (name, _), out in zip(assigned, query_columns(select, schema), strict=True):
        if name == "*":
            continue
        kept = frozenset(s for s in out.origin.sources if not s.startswith(f"{_MERGE_TARGET}."))
        why = out.origin.unresolved
        why = why.replace(_MERGE_TARGET, table_name(merge.this)) if why else None
        origin = Origin(kept, out.origin.transform, out.origin.type, why)
        by_name[name] = by_name[name].merge(origin) if name in by_name else origin
    star = _merge_star(merge, schema, using)
    for column in star:
        by_name.setdefault(column.name, column.origin)
    return [OutputColumn(n, o) for n, o in by_name.items()]


def _assignments(then: exp.Expr | None, source_alias: str) -> list[tuple[str, exp.Expr]]:
    if isinstance(then, exp.Update):
        pairs: list[tuple[str, exp.Expr]] = []
        for eq in then.expressions:
            if isinstance(eq, exp.Star):
                pairs.append(("*", exp.Star()))
            elif isinstance(eq, exp.EQ):
                pairs.append((eq.this.name, eq.expression))
        return pairs
    if isinstance(then, exp.Insert):
        if isinstance(then.this, exp.Star):
            return [("*", exp.Star())]
        names = [c.name for c in then.this.expressions] if then.this else []
        values = [v.copy() for v in then.expression.expressions] if then.expression else []
        for column in (c for v in values for c in v.find_all(exp.Column)):
            if not column.table and source_alias:  # no target row: a name is the source's
                column.set("table", exp.to_identifier(source_alias))
        return list(zip(names, values, strict=False))
    return []


def _merge_star(merge: exp.Expr, schema: Schema, using: exp.Expr) -> list[OutputColumn]:
    """UPDATE SET * / INSERT *: every column of the USING source, by name."""
    has_star = any(
        isinstance(when.args.get("then"), (exp.Update, exp.Insert))
        and any(n == "*" for n, _ in _assignments(when.args.get("then"), ""))
        for when in merge.args["whens"].expressions
    )
    if not has_star:
        return []
    if isinstance(using, exp.Table):
        query: exp.Expr = exp.select("*").from_(using.copy())
    else:
        query = using.this
    return query_columns(query, schema)


def schema_subset(sources: tuple[str, ...], known: Schema) -> dict[str, dict[str, str]]:
    """The part of ``known`` a statement reads, keyed as the statement names the tables."""
    return {s: dict(known[s]) for s in sources if s in known}


__all__ = ["ColumnLineage", "FileLineage", "schema_subset", "statement_columns", "table_name"]
