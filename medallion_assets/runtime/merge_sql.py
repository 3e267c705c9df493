"""Translate a MERGE INTO statement into one Spark SQL query over the target's current rows and
the source: plain Spark has no MERGE on Parquet, so the new version of the target is computed.

The target (with a row id) is FULL OUTER JOINed to the source on the ON condition. Each joined
row falls in one region: matched (both sides), not matched (source only) or not matched by
source (target only). The WHEN clauses of its region are tried in order and the first whose
condition holds decides the row's action and every column's value (CASE logic); a row no clause
takes keeps the target's values (matched, by source) or is dropped (not matched). A target row
matched by more than one source row is an error, as in Spark and Delta, unless the only WHEN
MATCHED clause is an unconditional DELETE.

>>> spec = merge_spec(parse_statement(
...     "MERGE INTO s.t USING s.src ON t.id = src.id WHEN NOT MATCHED THEN INSERT *",
...     "spark", None).expression)
>>> spec.source_alias, [c.action for c in spec.clauses]
('src', ['insert'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from medallion_assets.lineage.statement import SqlError, parse_statement
from medallion_assets.runtime.sql import point_at_views

# Names of the helper columns the query adds; a user column never needs them.
_ROW = "__merge_row"
CONFLICT_MARKER = "MERGE_CARDINALITY_VIOLATION"


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


def spark_merge(sql: str, dialect: str, target: str, views: Mapping[str, str]) -> MergeSpec:
    """The MERGE of a dataset's file, with every table it reads pointed at its view."""
    statement = parse_statement(sql, dialect, target)
    merge = statement.expression.copy()
    using = merge.args["using"]
    point_at_views(using, views)
    for when in merge.args["whens"].expressions:
        point_at_views(when, views)
    return merge_spec(merge)


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


def defined_columns_sql(spec: MergeSpec, source_columns: Sequence[str]) -> str:
    """A query over the source returning no rows whose columns are those the MERGE writes, with
    the types it writes them as: the table's columns when it has none yet (first build), and
    the columns a changed MERGE adds to it.

    Inserted columns come first, in clause order (``INSERT *`` and ``INSERT ROW`` give the
    source's), then those an UPDATE sets by name (its value's type, reading the target as
    NULL); ``UPDATE SET *`` gives the source's columns only when nothing else names any.
    """
    known = {c.lower() for c in source_columns}
    defined: dict[str, exp.Expr] = {}
    writers = [c for c in spec.clauses if c.action == "insert"]
    writers += [c for c in spec.clauses if c.action == "update" and not c.star]
    for clause in writers:
        if clause.star or clause.source_row:
            for column in source_columns:
                defined.setdefault(column.lower(), exp.column(column, spec.source_alias))
        for name, value in clause.assignments:
            defined.setdefault(name, _without_target(value.copy(), spec, known))
    if not defined and any(c.star for c in spec.clauses):  # only UPDATE SET *
        defined = {c.lower(): exp.column(c, spec.source_alias) for c in source_columns}
    if not defined:
        raise SqlError(
            f"MERGE INTO {spec.target} names no column it writes, so the table's columns are "
            "unknown before its first version: list them (INSERT (a, b) VALUES (s.a, s.b)) or "
            "use INSERT *"
        )
    select = ", ".join(f"{_spark(v)} AS {_quote(n)}" for n, v in defined.items())
    return f"SELECT {select} FROM ({spec.source_sql}) AS {_quote(spec.source_alias)} WHERE false"


def _without_target(value: exp.Expr, spec: MergeSpec, source_columns: set[str]) -> exp.Expr:
    for column in list(value.find_all(exp.Column)):
        on_target = column.table == spec.target_alias
        if on_target or (not column.table and column.name not in source_columns):
            column.replace(exp.Null())
    return value


def merge_query(
    spec: MergeSpec,
    target_view: str,
    target_columns: Sequence[str],
    output: Sequence[tuple[str, str]],
    source_columns: Sequence[str],
) -> str:
    """Spark SQL computing the target's rows after the MERGE.

    ``output`` is (column, Spark type) of the new version: the target's columns, then any the
    MERGE adds; each value is cast to its column's type.
    """
    t, s = _quote(spec.target_alias), _quote(spec.source_alias)
    in_target = {c.lower() for c in target_columns}
    columns = [
        f"CAST({_value(spec, i, name, in_target, source_columns)} AS {kind}) AS {_quote(name)}"
        for i, (name, kind) in enumerate(output)
    ]
    key = f"CASE WHEN {t}.{_ROW} IS NOT NULL THEN {t}.{_ROW} ELSE -1 - {s}.{_ROW} END"
    joined = (
        f"SELECT {', '.join(columns)}, {_action(spec)} AS __merge_action, "
        f"{key} AS __merge_key, CASE WHEN {_MATCHED.format(t=t, s=s)} THEN 1 END AS __merge_pair "
        f"FROM (SELECT *, monotonically_increasing_id() AS {_ROW} FROM {_quote(target_view)}) "
        f"AS {t} FULL OUTER JOIN (SELECT *, monotonically_increasing_id() AS {_ROW} "
        f"FROM ({spec.source_sql}) AS __merge_source) AS {s} ON {_spark(spec.on)}"
    )
    counted = (
        "SELECT *, count(__merge_pair) OVER (PARTITION BY __merge_key) AS __merge_matches, "
        "row_number() OVER (PARTITION BY __merge_key ORDER BY __merge_key) AS __merge_nth "
        f"FROM ({joined}) AS __merge_joined"
    )
    conflict = ""
    if spec.checks_cardinality:
        message = (
            f"{CONFLICT_MARKER}: MERGE INTO {spec.target}: a target row matched more than one "
            "source row; make the ON condition match at most one source row per target row "
            "(deduplicate the source)"
        )
        conflict = f"WHEN __merge_matches > 1 THEN raise_error({_string(message)}) "
    keep = (
        f"CASE {conflict}WHEN __merge_action IN ('update', 'insert') THEN true "
        "WHEN __merge_action = 'keep' THEN __merge_nth = 1 ELSE false END"
    )
    names = ", ".join(_quote(n) for n, _ in output)
    return f"SELECT {names} FROM ({counted}) AS __merge_counted WHERE {keep}"


_MATCHED = "{t}.__merge_row IS NOT NULL AND {s}.__merge_row IS NOT NULL"


def _regions(spec: MergeSpec) -> list[tuple[str, str, str]]:
    """(region, its predicate, what happens to a row no clause takes)."""
    t, s = _quote(spec.target_alias), _quote(spec.source_alias)
    return [
        ("matched", _MATCHED.format(t=t, s=s), "keep"),
        ("not_matched", f"{t}.{_ROW} IS NULL", "drop"),
        ("not_matched_by_source", f"{s}.{_ROW} IS NULL", "keep"),
    ]


def _action(spec: MergeSpec) -> str:
    branches = []
    for region, predicate, otherwise in _regions(spec):
        inner = [
            f"WHEN {_condition(c)} THEN '{_outcome(c, otherwise)}'"
            for c in spec.clauses
            if c.region == region
        ]
        body = f"CASE {' '.join(inner)} ELSE '{otherwise}' END" if inner else f"'{otherwise}'"
        branches.append(f"WHEN {predicate} THEN {body}")
    return f"CASE {' '.join(branches)} END"


def _outcome(clause: Clause, otherwise: str) -> str:
    return otherwise if clause.action == "nothing" else clause.action


def _value(
    spec: MergeSpec, index: int, name: str, in_target: set[str], source_columns: Sequence[str]
) -> str:
    """Output column ``index``: the value of the first clause of its row's region that applies."""
    current = f"{_quote(spec.target_alias)}.{_quote(name)}" if name in in_target else "NULL"
    branches = []
    for region, predicate, _ in _regions(spec):
        inner = [
            f"WHEN {_condition(c)} THEN "
            + _clause_value(spec, c, (index, name), current, source_columns)
            for c in spec.clauses
            if c.region == region
        ]
        default = "NULL" if region == "not_matched" else current
        body = f"CASE {' '.join(inner)} ELSE {default} END" if inner else default
        branches.append(f"WHEN {predicate} THEN {body}")
    return f"CASE {' '.join(branches)} END"


def _clause_value(
    spec: MergeSpec,
    clause: Clause,
    column: tuple[int, str],
    current: str,
    source_columns: Sequence[str],
) -> str:
    """The value ``clause`` gives output column (position, name); ``current`` is the target's."""
    index, name = column
    if clause.action in ("delete", "nothing"):
        return current  # a deleted row is dropped; DO NOTHING keeps the row as it is
    unset = current if clause.action == "update" else "NULL"
    by_name = {c.lower(): c for c in source_columns}
    if clause.positional is not None:  # INSERT VALUES (...): the target's columns in order
        return _spark(clause.positional[index]) if index < len(clause.positional) else "NULL"
    if clause.source_row:  # INSERT ROW: the source's columns in order
        found = source_columns[index] if index < len(source_columns) else None
        return f"{_quote(spec.source_alias)}.{_quote(found)}" if found else "NULL"
    if clause.star:
        found = by_name.get(name)
        return f"{_quote(spec.source_alias)}.{_quote(found)}" if found else unset
    values = dict(clause.assignments)
    if name in values:
        return _spark(values[name])
    return unset


def _condition(clause: Clause) -> str:
    return _spark(clause.condition) if clause.condition is not None else "true"


def _spark(node: exp.Expr) -> str:
    return node.sql(dialect="spark")


def _quote(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect="spark")


def _string(text: str) -> str:
    return exp.Literal.string(text).sql(dialect="spark")


__all__ = [
    "CONFLICT_MARKER",
    "Clause",
    "MergeSpec",
    "defined_columns_sql",
    "merge_query",
    "merge_spec",
    "spark_merge",
]
