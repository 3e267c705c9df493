"""Whether a table may be built incrementally, decided from its SQL: ``append`` (each run reads
only the rows its driving input gained and appends what they produce) or ``merge`` on keys (each
run recomputes every driving row of the keys whose driving rows changed, and merges the result).
A kind is honoured only when that always equals a full rebuild; when unsure it is refused, with
the reason and the line (``NotIncremental``).

Append needs the output to be a sum over driving rows: the driving input read once, on the
preserved side of its joins, with no aggregate, window, DISTINCT, LIMIT or set operation but UNION
ALL (each branch reading it) between it and the output. Merge relaxes that per key: a GROUP BY, a
PARTITION BY or a DISTINCT that holds every key keeps the rows of one key together. The other
inputs are read whole, so they may do anything (``driving_reads.py`` walks the query).

>>> from medallion_assets.lineage.statement import parse_statement
>>> sql = "SELECT o.id, c.name FROM bronze.orders o JOIN bronze.customers c ON c.id = o.cid"
>>> statement = parse_statement(sql, "spark", "silver.named_orders")
>>> plan = incremental(statement, "merge", ["id"])
>>> plan.driving, plan.keys
('bronze.orders', (('id', 'id'),))
>>> plan.keyed  # a customer's change recomputes the orders of its id, by their cid
(('bronze.customers', (('cid', 'id'),)),)
>>> incremental(statement, "append", driving="bronze.orders").driving
'bronze.orders'
>>> possible_kinds(parse_statement("SELECT id, amount FROM bronze.orders", "spark", "s.t"), {})
['append', 'merge on id']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.scope import build_scope

from medallion_assets.lineage.columns import Schema, query_columns
from medallion_assets.lineage.driving_reads import DrivingReads, Keys, NotIncremental, line_of
from medallion_assets.lineage.keyed_inputs import Keyed, keyed_inputs
from medallion_assets.lineage.plain_copies import PlainCopies
from medallion_assets.lineage.statement import SqlError, Statement

__all__ = ["Incremental", "NotIncremental", "incremental", "possible_kinds"]


@dataclass(frozen=True)
class Incremental:
    """What a run needs: how it writes, which input's changes drive it, (merge) each key
    output column with the driving input's column it copies, and the other inputs whose
    changed rows name the keys they touch (``keyed_inputs``)."""

    kind: str  # "append" | "merge" | "scd2"
    driving: str  # "layer.table", one of the statement's sources
    keys: Keys = ()
    keyed: Keyed = ()


_WRITES = {  # statements that say themselves how they change the table
    "merge": "a MERGE INTO file already says how it changes the table; remove kind",
    "update": "an UPDATE file already says how it changes the table; remove kind",
    "insert": "an INSERT INTO file already appends on every run; remove kind, or write a SELECT",
    "insert_overwrite": "an INSERT OVERWRITE file replaces the table on every run; write a "
    "bare SELECT to build it incrementally",
    "create_view": "a view is computed when read and holds no rows to add to; remove kind, or "
    "write CREATE TABLE ... AS SELECT",
}


def incremental(
    statement: Statement,
    kind: str,
    keys: Sequence[str] = (),
    driving: str | None = None,
    schema: Schema | None = None,
) -> Incremental:
    """What a run of ``kind`` (append or merge) needs, or ``NotIncremental`` saying why the kind
    is unsafe. ``statement`` is the file's, parsed as lineage parses it (temporary views
    inlined); ``schema`` (table -> column -> type) resolves unqualified columns."""
    if kind not in ("append", "merge", "scd2"):
        raise NotIncremental(f"kind {kind}: not an incremental kind; choose append or merge")
    # An scd2 table's history follows its driving input's changes only: no keyed inputs.
    plan = _plan(statement, "merge" if kind == "scd2" else kind, keys, driving, schema)
    return Incremental(kind, plan.driving, plan.keys, plan.keyed if kind == "merge" else ())


def _plan(
    statement: Statement,
    kind: str,
    keys: Sequence[str],
    driving: str | None,
    schema: Schema | None,
) -> Incremental:
    """``incremental`` of an append or merge (an scd2 table's SQL must honour merge: each
    version of a key is recomputed from every driving row of the key)."""
    copies = _copies(statement, kind, schema or {})
    if kind == "append" and keys:
        raise NotIncremental("kind append: keys apply to kind merge only; remove keys")
    if driving is not None and driving not in statement.sources:
        inputs = ", ".join(statement.sources)
        raise NotIncremental(f"kind {kind}: driving {driving} is not an input of it ({inputs})")
    if driving is None and len(statement.sources) == 1:
        driving = statement.sources[0]
    if driving is not None:  # what the query does to its rows first, then its keys
        DrivingReads(copies, kind, driving).run()
    names = tuple(key.lower() for key in keys)
    copied = _key_copies(statement, copies, names, schema or {}) if kind == "merge" else {}
    driving = driving or _driving(statement, kind, copied)
    # The keys that copy a driving column say which driving rows a key's rows come from; the
    # others (a line number the SQL computes) only tell those rows apart.
    pairs = tuple(
        (key, copy.rsplit(".", 1)[1])
        for key, copy in copied.items()
        if copy.rsplit(".", 1)[0] == driving
    )
    if kind == "merge" and not pairs:
        key, copy = next(iter(copied.items()))
        raise NotIncremental(
            f"kind merge: no key copies a column of the driving input {driving} (key {key} "
            f"copies {copy}): add a key copied from {driving}, or name another driving",
            line_of(_projection(copies, key)),
        )
    DrivingReads(copies, kind, driving, pairs).run()
    keyed = keyed_inputs(copies, statement.sources, driving, pairs) if kind == "merge" else ()
    return Incremental(kind, driving, pairs, keyed)


def possible_kinds(statement: Statement, schema: Schema) -> list[str]:
    """The incremental kinds the table could declare, for ``catalog show``: ``append`` (naming
    the driving input when there are several) and ``merge on`` keys; [] when only full."""
    try:
        copies = _copies(statement, "append", schema)
    except NotIncremental:
        return []
    several = len(statement.sources) > 1
    found = [
        f"append (driving {driving})" if several else "append"
        for driving in statement.sources
        if _holds(copies, "append", driving, ())
    ]
    for driving in statement.sources:
        options = _key_options(copies, driving)
        keys = next((k for k in options if _holds(copies, "merge", driving, k)), None)
        if keys:
            found.append("merge on " + ", ".join(name for name, _ in keys))
    return found


def _holds(copies: PlainCopies, kind: str, driving: str, keys: Keys) -> bool:
    try:
        DrivingReads(copies, kind, driving, keys).run()
    except NotIncremental:
        return False
    return True


def _key_options(copies: PlainCopies, driving: str) -> list[Keys]:
    """Keys worth suggesting: the columns of the output's GROUP BY (together they identify a
    row), else each output column copied from ``driving``, in output order."""
    root = copies.root
    copied = [(name, copies.through(root, name)) for name in copies.names(root) or []]
    prefix = driving + "."
    candidates = [(n, c.removeprefix(prefix)) for n, c in copied if c and c.startswith(prefix)]
    group = root.expression.args.get("group") if isinstance(root.expression, exp.Select) else None
    if group is None:
        return [(pair,) for pair in candidates]
    held = {copies.copied(root, e) for e in copies.grouped(root, group)}
    keys = tuple((n, c) for n, c in candidates if prefix + c in held)
    return [keys] if keys and {prefix + c for _, c in keys} == held else []


def _copies(statement: Statement, kind: str, schema: Schema) -> PlainCopies:
    """The statement's query, ready to walk; ``NotIncremental`` for a file no kind suits."""
    if statement.kind not in ("select", "create_table"):
        problem = _WRITES.get(statement.kind, f"a {statement.kind} statement copies whole")
    elif statement.query is None:
        problem = "the statement holds constant rows, no query; remove kind"
    elif not statement.sources:
        problem = "the query reads no table, so no run has new rows to read; remove kind"
    else:
        root = build_scope(statement.query)
        if root is not None:
            return PlainCopies(root, schema)
        problem = "its query cannot be analysed; remove kind"
    raise NotIncremental(f"kind {kind}: {problem}", line_of(statement.expression))


def _key_copies(
    statement: Statement, copies: PlainCopies, keys: tuple[str, ...], schema: Schema
) -> dict[str, str]:
    """Each key that is a plain copy, with the "table.column" it copies; a key the SQL computes
    is left out (it only tells rows apart), unless no key is a copy."""
    if not keys:
        raise NotIncremental("kind merge needs keys: the output columns that identify a row")
    found: dict[str, str] = {}
    outputs = copies.names(copies.root)
    refused = None
    for key in keys:
        copy = copies.through(copies.root, key)
        if copy is not None:
            found[key] = copy
            continue
        why = _not_a_copy(statement, copies, key, schema)
        refusal = NotIncremental(f"kind merge: key {key} {why}", line_of(_projection(copies, key)))
        if outputs is not None and key not in outputs:
            raise refusal  # not a column of the output at all
        refused = refused or refusal
    if not found and refused is not None:
        raise refused
    return found


def _not_a_copy(statement: Statement, copies: PlainCopies, key: str, schema: Schema) -> str:
    """Why the output column ``key`` is no plain copy of one column."""
    projection = _projection(copies, key)
    value = projection.unalias() if projection is not None else None
    if value is not None and not isinstance(value, exp.Column):
        text = value.sql("spark")
        return (
            f"is {text if len(text) <= 60 else text[:57] + '...'}, not a plain copy of one "
            "column: choose a column the query copies unchanged from the driving input"
        )
    try:
        query = statement.query
        outputs = {c.name: c.origin for c in query_columns(query, schema)} if query else {}
    except (SqlError, SqlglotError):
        outputs = {}
    origin = outputs.get(key)
    if origin is None and value is None:
        listed = ", ".join(name for name in outputs if name != "*") or "unknown"
        return f"is not an output column of the query ({listed}): choose one of its columns"
    read = ", ".join(sorted(origin.sources)) if origin else ""
    if origin is not None and origin.unresolved:
        return (
            f"cannot be followed to the column it copies ({origin.unresolved}): qualify the "
            "columns it passes through, or choose another key"
        )
    if origin is not None and origin.transform != "direct":
        return (
            f"is computed from {read or 'no column'} ({origin.transform}, in a CTE or subquery), "
            "not a plain copy of one column: choose a column the query copies unchanged from "
            "the driving input"
        )
    return (
        f"is not the same plain copy of one column through every CTE, subquery and UNION "
        f"branch it passes (it reads {read or 'unknown columns'}): choose another key, or "
        "qualify the columns it passes through"
    )


def _driving(statement: Statement, kind: str, copied: dict[str, str]) -> str:
    """The driving input left unnamed: the one all merge keys copy from, or the only input."""
    tables = sorted({copy.rsplit(".", 1)[0] for copy in copied.values()})
    if len(tables) == 1:
        return tables[0]
    if len(statement.sources) == 1:
        return statement.sources[0]
    candidates = ", ".join(tables or statement.sources)
    raise NotIncremental(f"kind {kind}: name the driving input: driving: one of {candidates}")


def _projection(copies: PlainCopies, name: str) -> exp.Expr | None:
    """The output column ``name`` in the query's (first) SELECT, when it lists it."""
    query = copies.root.expression
    while isinstance(query, exp.SetOperation):
        query = query.this
    named = [p for p in query.expressions if p.alias_or_name == name]
    return named[0] if isinstance(query, exp.Select) and named else None
