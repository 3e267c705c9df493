"""The clauses of a MERGE INTO statement as plain data, read from any dialect sqlglot parses:
each WHEN clause's region, condition and action, the source as a query. The catalog reads them
at load (a clause Spark cannot run is a load error), the runtime translates them for Spark.

>>> from medallion_assets.lineage.statement import parse_statement
>>> spec = merge_spec(parse_statement(
...     "MERGE INTO s.t USING s.src ON t.id = src.id WHEN NOT MATCHED THEN INSERT *",
...     "spark", None).expression)
>>> spec.source_alias, [c.action for c in spec.clauses]
('src', ['insert'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp

from medallion_assets.lineage.statement import SqlError


@dataclass(frozen=True)
class Clause:
    """One WHEN clause: its region, condition and what it does."""

    region: str  # matched | not_matched | not_matched_by_source
    condition: exp.Expr | None
    action: str  # update | delete | insert | nothing
    assignments: tuple[tuple[str, exp.Expr], ...] = ()  # column -> value
    star: bool = False  # UPDATE SET * / INSERT *: columns of the source, by name
    positional: tuple[exp.Expr, ...] | None = None  # INSERT VALUES (...) without column names
    source_row: bool = False  # BigQuery's INSERT ROW: every source column, by position


@dataclass(frozen=True)
class MergeSpec:
    target: str  # the target table, as written
    target_alias: str
    source: exp.Expr  # the USING relation as a query (tables already pointed at their views)
    source_alias: str
    on: exp.Expr
    clauses: tuple[Clause, ...]
    preamble: tuple[str, ...] = ()  # run first: the file's temporary views and functions

    @property
    def source_sql(self) -> str:
        return self.source.sql(dialect="spark")

    @property
    def checks_cardinality(self) -> bool:
        """Spark's rule: several source rows may match one target row only when no WHEN MATCHED
        clause could use them, or the only one is an unconditional DELETE."""
        matched = [c for c in self.clauses if c.region == "matched"]
        only_delete = len(matched) == 1 and matched[0].action == "delete"
        return bool(matched) and not (only_delete and matched[0].condition is None)

    @property
    def keys(self) -> tuple[tuple[str, exp.Expr], ...]:
        """What identifies a target row, from the ON condition's equalities joined by AND: each
        target column and the source expression it equals (none when ON is not such a
        condition).

        >>> from medallion_assets.lineage.statement import parse_statement
        >>> spec = merge_spec(parse_statement("MERGE INTO t USING s ON t.id = s.id AND "
        ...     "upper(s.cc) = t.country AND t.on_sale WHEN NOT MATCHED THEN INSERT *",
        ...     "spark", None).expression)
        >>> [(column, value.sql()) for column, value in spec.keys]
        [('id', 's.id'), ('country', 'UPPER(s.cc)')]
        """
        keys = []
        for condition in self.on.flatten() if isinstance(self.on, exp.And) else [self.on]:
            if not isinstance(condition, (exp.EQ, exp.NullSafeEQ)):
                continue
            left, right = condition.this, condition.expression
            for column, value in ((left, right), (right, left)):
                if self._target_column(column) and self._reads_source_only(value):
                    keys.append((column.name, value))
                    break
        return tuple(keys)

    @property
    def inserts(self) -> bool:
        """Whether a source row no target row matches can become a new row."""
        return any(c.region == "not_matched" and c.action == "insert" for c in self.clauses)

    def _target_column(self, node: exp.Expr) -> bool:
        return isinstance(node, exp.Column) and node.table == self.target_alias

    def _reads_source_only(self, node: exp.Expr) -> bool:
        columns = list(node.find_all(exp.Column))
        return bool(columns) and all(c.table == self.source_alias for c in columns)


def merge_spec(merge: exp.Expr) -> MergeSpec:
    """The parts of a parsed MERGE, with column references to either side normalised to the
    side's alias (``silver.t.id`` -> ``t.id``)."""
    target = merge.this
    using = merge.args["using"]
    target_alias = target.alias or target.name
    if isinstance(using, exp.Table):
        source_alias = using.alias or using.name
        relation = using.copy()
        relation.set("alias", None)
        source: exp.Expr = exp.select("*").from_(relation)
    else:
        source_alias = using.alias or "__source"
        source = using.this.copy()
    aliases = {
        target_alias: (target.name, target_alias),
        source_alias: (_name(using), source_alias),
    }
    on = merge.args.get("on")
    if on is None:
        raise SqlError("MERGE INTO needs an ON condition: add ON target.key = source.key")
    clauses = tuple(_clause(when.copy(), source_alias) for when in merge.args["whens"].expressions)
    spec = MergeSpec(
        ".".join(p.name for p in target.parts),
        target_alias,
        source,
        source_alias,
        on.copy(),
        clauses,
    )
    for node in [spec.on, *[c.condition for c in clauses if c.condition is not None]]:
        _normalise_columns(node, aliases)
    for clause in clauses:
        for value in [v for _, v in clause.assignments] + list(clause.positional or ()):
            _normalise_columns(value, aliases)
    return spec


def _name(using: exp.Expr) -> str:
    return using.name if isinstance(using, exp.Table) else ""


def _normalise_columns(node: exp.Expr, aliases: Mapping[str, tuple[str, str]]) -> None:
    for column in node.find_all(exp.Column):
        table = column.table
        for alias, (name, wanted) in aliases.items():
            if table and table in (alias, name):
                column.set("table", exp.to_identifier(wanted))
                column.set("db", None)
                column.set("catalog", None)


def _clause(when: exp.Expr, source_alias: str) -> Clause:
    if when.args.get("matched"):
        region = "matched"
    elif when.args.get("source"):
        region = "not_matched_by_source"
    else:
        region = "not_matched"
    condition = when.args.get("condition")
    if condition is not None and region == "not_matched":
        condition = _qualify(condition, source_alias)  # it can only read the source
    then = when.args.get("then")
    if isinstance(then, exp.Update):
        if any(isinstance(e, exp.Star) for e in then.expressions):
            return Clause(region, condition, "update", star=True)
        pairs = tuple((eq.this.name, eq.expression) for eq in then.expressions)
        return Clause(region, condition, "update", pairs)
    if isinstance(then, exp.Insert):
        return _insert_clause(region, condition, then, source_alias)
    action = then.name.upper() if isinstance(then, exp.Var) else ""
    if action == "DELETE":
        return Clause(region, condition, "delete")
    if action == "DO NOTHING":
        return Clause(region, condition, "nothing")
    raise SqlError(f"MERGE clause 'THEN {then}' is not supported: use UPDATE, DELETE or INSERT")


def _insert_clause(
    region: str, condition: exp.Expr | None, insert: exp.Insert, source_alias: str
) -> Clause:
    columns, values = insert.this, insert.expression
    if isinstance(columns, exp.Star):
        return Clause(region, condition, "insert", star=True)
    if isinstance(columns, exp.Var) and columns.name.upper() == "ROW":
        return Clause(region, condition, "insert", source_row=True)
    # An INSERT's values can only read the source: unqualified names are the source's.
    value_list = [_qualify(v, source_alias) for v in (values.expressions if values else [])]
    if columns is None:
        return Clause(region, condition, "insert", positional=tuple(value_list))
    names = [c.name for c in columns.expressions]
    if len(names) != len(value_list):
        raise SqlError(
            f"MERGE INSERT lists {len(names)} column(s) but {len(value_list)} value(s): "
            "give one value per column"
        )
    return Clause(region, condition, "insert", tuple(zip(names, value_list, strict=True)))


def _qualify(value: exp.Expr, alias: str) -> exp.Expr:
    for column in value.find_all(exp.Column):
        if not column.table:
            column.set("table", exp.to_identifier(alias))
    return value


__all__ = ["Clause", "MergeSpec", "merge_spec"]
