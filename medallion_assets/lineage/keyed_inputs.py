"""Which other inputs of a merge table name the keys their changes can touch, so that a change to
one of them is merged too instead of rebuilding the table (``incremental.py``).

An input is keyed when each of its reads meets the driving rows only through a join on a
driving column: its rows (or those of the CTE or derived table that reads it, itself safe to
merge on the joined column) are joined by an inner or left join whose ON holds, among its
ANDed terms, an equality between one of its columns and a plain copy of a column of the
driving input (a key's, or any other: a shipment's order id). A row of it then lands only in
output rows of the driving rows holding that value, so its changed rows name, through those
driving rows, every key whose output may change. Any other read (in FROM, a subquery, a right
or full join, an unqualified column, a computed driving value) leaves it unkeyed: a change to
it rebuilds the table in full.

>>> import sqlglot
>>> from sqlglot.optimizer.scope import build_scope
>>> sql = ('''SELECT o.id, o.cid, u.name, p.paid FROM s.orders o
...     LEFT JOIN s.users u ON u.cid = o.cid
...     LEFT JOIN (SELECT order_id, sum(amount) AS paid FROM s.payments GROUP BY order_id) p
...         ON p.order_id = o.id
...     JOIN s.notes n ON n.text = upper(o.note)''')
>>> copies = PlainCopies(build_scope(sqlglot.parse_one(sql)), {})
>>> inputs = ["s.orders", "s.users", "s.payments", "s.notes"]
>>> keyed = keyed_inputs(copies, inputs, "s.orders", (("id", "id"),))
>>> keyed
(('s.payments', (('id', 'order_id'),)), ('s.users', (('cid', 'cid'),)))
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from medallion_assets.lineage.driving_reads import DrivingReads, Keys, NotIncremental
from medallion_assets.lineage.plain_copies import PlainCopies
from medallion_assets.lineage.select_parts import read_holder

# (the driving input's column, the input's column joined to it), for one input
Joined = tuple[tuple[str, str], ...]
# (input, how it is joined to the driving rows), by input
Keyed = tuple[tuple[str, Joined], ...]


def keyed_inputs(copies: PlainCopies, inputs: Sequence[str], driving: str, keys: Keys) -> Keyed:
    """Each of ``inputs`` (the statement's) but ``driving`` whose changed rows name the keys
    they touch, with the driving columns its columns are joined to (``keys``: the merge's keys
    with the driving columns they copy)."""
    found = []
    for source in sorted(set(inputs) - {driving}):
        mapped = _keyed(copies, driving, keys, source)
        if mapped:
            found.append((source, mapped))
    return tuple(found)


def _keyed(copies: PlainCopies, driving: str, keys: Keys, source: str) -> Joined | None:
    """The driving columns ``source``'s columns are joined to, the same for every read of it;
    None when some read of it is not joined on a driving column."""
    drives = DrivingReads(copies, "merge", driving, keys)
    reads = DrivingReads(copies, "merge", source)
    covered: set[int] = set()
    mapping: set[tuple[str, str]] | None = None
    for scope in _scopes(copies.root):
        if not drives.reads(scope):
            continue
        for node, relation in _relations(scope):
            if isinstance(relation, exp.Table):
                if not reads.is_driving(relation):
                    continue
            elif drives.reads(relation) or not reads.reads(relation):
                continue  # a scope reading the driving input is walked itself
            found = _joined_on_driving(copies, scope, node, relation, driving, source)
            if not found or (mapping is not None and found != mapping):
                return None
            mapping = found
            covered |= _tables_of(relation)
    every = {id(t) for t in copies.root.expression.find_all(exp.Table) if reads.is_driving(t)}
    if mapping is None or every - covered:
        return None  # a read of it elsewhere (a subquery, a scope not reading the driving)
    return tuple(sorted(mapping))


def _joined_on_driving(
    copies: PlainCopies,
    scope: Scope,
    node: exp.Expr,
    relation: exp.Table | Scope,
    driving: str,
    source: str,
) -> set[tuple[str, str]]:
    """(the driving column, ``source``'s column) for each ANDed equality of the join holding
    ``node`` between the relation's column (a copy of ``source``'s, its rows safe to merge on
    it) and a plain copy of a column of the driving input."""
    holder = read_holder(node)
    join = holder.parent
    if not isinstance(join, exp.Join) or join.side in ("RIGHT", "FULL"):
        return set()
    if join.kind in ("SEMI", "ANTI", "CROSS") or join.args.get("on") is None:
        return set()
    on = join.args["on"]
    terms = list(on.flatten()) if isinstance(on, exp.And) else [on]
    alias = holder.alias_or_name
    found = set()
    for term in terms:
        if not isinstance(term, exp.EQ):
            continue
        for mine, other in ((term.this, term.expression), (term.expression, term.this)):
            table, _, driven = (copies.copied(scope, other) or "").rpartition(".")
            if not isinstance(mine, exp.Column) or mine.table != alias or table != driving:
                continue
            column = _source_column(copies, relation, mine.name, source)
            if column is not None:
                found.add((driven, column))
    return found


def _source_column(
    copies: PlainCopies, relation: exp.Table | Scope, name: str, source: str
) -> str | None:
    """``source``'s column that the relation's column ``name`` copies, when the relation's rows
    of one value of it come only from ``source``'s rows of that value."""
    if isinstance(relation, exp.Table):
        return name if copies.through(relation, name) == f"{source}.{name}" else None
    copied = copies.through(relation, name)
    if copied is None or copied.rsplit(".", 1)[0] != source:
        return None
    column = copied.rsplit(".", 1)[1]
    try:
        DrivingReads(PlainCopies(relation, copies.schema), "merge", source, ((name, column),)).run()
    except NotIncremental:
        return None
    return column


def _scopes(root: Scope) -> Iterator[Scope]:
    """Every scope of the query once, CTEs included."""
    seen: set[int] = set()
    for scope in root.traverse():
        if id(scope) not in seen:
            seen.add(id(scope))
            yield scope


def _relations(scope: Scope) -> Iterator[tuple[exp.Expr, exp.Table | Scope]]:
    """What ``scope``'s FROM and JOINs read: (the node read, a base table or the CTE or derived
    table's scope)."""
    for table in scope.tables:
        cte = scope.cte_sources.get(table.name) if not table.db and not table.catalog else None
        yield table, cte if isinstance(cte, Scope) else table
    for derived in scope.derived_table_scopes:
        yield derived.expression, derived


def _tables_of(relation: exp.Table | Scope) -> set[int]:
    """The table nodes a relation reads: itself, or every table of the scopes it reaches (the
    CTEs it names included)."""
    if isinstance(relation, exp.Table):
        return {id(relation)}
    found: set[int] = set()
    pending, seen = [relation], set()
    while pending:
        scope = pending.pop()
        if id(scope) in seen:
            continue
        seen.add(id(scope))
        found |= {id(t) for t in scope.expression.find_all(exp.Table)}
        pending += [*scope.subquery_scopes, *scope.derived_table_scopes]
        pending += [*scope.set_operation_scopes, *scope.udtf_scopes]
        pending += [s for s in scope.cte_sources.values() if isinstance(s, Scope)]
    return found
