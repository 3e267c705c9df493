"""The columns a MERGE INTO writes, as a query Spark can type: the table's schema before its
first MERGE, and the columns a changed MERGE adds. Iceberg runs the MERGE itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp

from medallion_assets.lineage.merge_clauses import MergeSpec
from medallion_assets.lineage.statement import SqlError

CONFLICT_MARKER = "MERGE_CARDINALITY_VIOLATION"
_RANK = "__medallion_rank"
SAMPLE_KEYS = 3


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


def latest_source(spec: MergeSpec, latest_by: Sequence[str]) -> exp.Expr:
    """The MERGE's source as a subquery keeping, of the rows that share a key (``spec.keys``),
    those that sort last by ``latest_by`` (source columns, descending). ``rank``, not
    ``row_number``: rows tied on ``latest_by`` all stay, so a tie is refused as a duplicate
    key rather than settled by chance."""
    keys = ", ".join(_spark(value) for _, value in spec.keys)
    alias = _quote(spec.source_alias)
    order = ", ".join(f"{alias}.{_quote(c)} DESC" for c in latest_by)
    ranked = (
        f"SELECT *, rank() OVER (PARTITION BY {keys} ORDER BY {order}) AS {_quote(_RANK)} "
        f"FROM ({spec.source_sql}) AS {alias}"
    )
    query = f"SELECT * EXCEPT ({_quote(_RANK)}) FROM ({ranked}) WHERE {_quote(_RANK)} = 1"
    return exp.Subquery(
        this=sqlglot.parse_one(query, read="spark"),
        alias=exp.TableAlias(this=exp.to_identifier(spec.source_alias)),
    )


def duplicate_keys_sql(spec: MergeSpec) -> str:
    """One row: how many keys (``spec.keys``) more than one source row holds, and a few of
    them as JSON objects of the target's key columns."""
    values = [f"{_spark(v)} AS {_quote(c)}" for c, v in spec.keys]
    keys = ", ".join(_spark(v) for _, v in spec.keys)
    columns = ", ".join(_quote(c) for c, _ in spec.keys)
    held = (
        f"SELECT {', '.join(values)} FROM ({spec.source_sql}) AS {_quote(spec.source_alias)} "
        f"GROUP BY {keys} HAVING count(*) > 1"
    )
    return (
        f"SELECT count(*) AS held, slice(collect_list(to_json(struct({columns}))), 1, "
        f"{SAMPLE_KEYS}) AS sample FROM ({held})"
    )


def _without_target(value: exp.Expr, spec: MergeSpec, source_columns: set[str]) -> exp.Expr:
    for column in list(value.find_all(exp.Column)):
        on_target = column.table == spec.target_alias
        if on_target or (not column.table and column.name not in source_columns):
            column.replace(exp.Null())
    return value


def _spark(node: exp.Expr) -> str:
    return node.sql(dialect="spark")


def _quote(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect="spark")


__all__ = ["CONFLICT_MARKER", "defined_columns_sql", "duplicate_keys_sql", "latest_source"]
