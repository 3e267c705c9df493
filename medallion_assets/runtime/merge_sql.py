"""Translate a MERGE INTO statement into one Spark SQL query over the target's current rows and
the source: plain Spark has no MERGE on Parquet, so the new version of the target is computed.

The target (with a row id) is FULL OUTER JOINed to the source on the ON condition. Each joined
row falls in one region: matched (both sides), not matched (source only) or not matched by
source (target only). The WHEN clauses of its region are tried in order and the first whose
condition holds decides the row's action and every column's value (CASE logic); a row no clause
takes keeps the target's values (matched, by source) or is dropped (not matched). A target row
matched by more than one source row is an error, as in Spark and Delta, unless the only WHEN
MATCHED clause is an unconditional DELETE.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from medallion_assets.lineage.merge_clauses import Clause, MergeSpec
from medallion_assets.lineage.statement import SqlError

# Names of the helper columns the query adds; a user column never needs them.
_ROW = "__merge_row"
CONFLICT_MARKER = "MERGE_CARDINALITY_VIOLATION"


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
    for clause in spec.clauses:
        if clause.positional is not None and len(clause.positional) > len(output):
            raise SqlError(
                f"MERGE INSERT VALUES gives {len(clause.positional)} values but "
                f"{spec.target} has {len(output)} columns: list the columns, "
                "INSERT (a, b) VALUES (...)"
            )
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
    current = f"{_quote(spec.target_alias)}.{_quote(name)}" if name.lower() in in_target else "NULL"
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
        found = by_name.get(name.lower())
        return f"{_quote(spec.source_alias)}.{_quote(found)}" if found else unset
    values = dict(clause.assignments)
    if name.lower() in values:
        return _spark(values[name.lower()])
    return unset


def _condition(clause: Clause) -> str:
    return _spark(clause.condition) if clause.condition is not None else "true"


def _spark(node: exp.Expr) -> str:
    return node.sql(dialect="spark")


def _quote(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect="spark")


def _string(text: str) -> str:
    return exp.Literal.string(text).sql(dialect="spark")


__all__ = ["CONFLICT_MARKER", "defined_columns_sql", "merge_query"]
