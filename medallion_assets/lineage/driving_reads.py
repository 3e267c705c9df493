"""How a query reads its driving input, for incremental builds (``incremental.py``): the walk over
the scopes that read it, from the output down, refusing the first construct that would make an
incremental run differ from a full rebuild.

>>> import sqlglot
>>> from sqlglot.optimizer.scope import build_scope
>>> query = sqlglot.parse_one("SELECT k, count(*) AS n FROM b.t GROUP BY k")
>>> copies = PlainCopies(build_scope(query), {})
>>> DrivingReads(copies, "merge", "b.t", (("k", "k"),)).run()  # one key per group: fine
>>> DrivingReads(copies, "append", "b.t").run()
Traceback (most recent call last):
medallion_assets.lineage.driving_reads.NotIncremental: kind append: the driving input b.t is \
aggregated (GROUP BY on line 1), so new rows would change rows already written: use kind merge \
with keys that the GROUP BY holds, or kind full
"""

from __future__ import annotations

from typing import NoReturn

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from medallion_assets.lineage.plain_copies import PlainCopies
from medallion_assets.lineage.relations import is_table_function
from medallion_assets.lineage.select_parts import (
    GROUPING_SETS,
    called,
    clock_call,
    partition,
    read_holder,
    windows_and_aggregates,
)
from medallion_assets.lineage.statement import table_name

Keys = tuple[tuple[str, str], ...]  # (output column, the driving input's column it copies)


class NotIncremental(ValueError):
    """Why the kind cannot be honoured: ``reason`` says what to change, ``line`` (1-based, in
    the SQL file) is where the construct at fault starts, None when unknown."""

    def __init__(self, reason: str, line: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.line = line


def line_of(node: exp.Expr | None) -> int | None:
    """The first line of ``node``'s text, from the positions sqlglot keeps on its tokens."""
    if node is None:
        return None
    return min((n.meta["line"] for n in node.walk() if "line" in n.meta), default=None)


class DrivingReads:
    """The walk over the scopes that read the driving input, from the output down."""

    def __init__(self, copies: PlainCopies, kind: str, driving: str, keys: Keys = ()):
        self.copies, self.kind, self.driving, self.keys = copies, kind, driving, keys
        self._reads: dict[int, bool] = {}
        self._checked: set[int] = set()

    def run(self) -> None:
        """Raise ``NotIncremental`` on the first construct that makes ``kind`` unsafe."""
        root = self.copies.root
        self._unfollowed(root)
        if not self.reads(root):
            self.fail(
                f"the query's rows do not depend on the driving input {self.driving} (only a "
                "CTE nothing reads names it), so every run would write them again: choose an "
                "input the query reads",
                None,
            )
        self.check(root)

    def fail(self, what: str, node: exp.Expr | None) -> NoReturn:
        """Refuse: ``what`` says why, its ``{at}`` becomes " on line N" when the line is known."""
        line = line_of(node)
        at = f" on line {line}" if line else ""
        raise NotIncremental(f"kind {self.kind}: " + what.replace("{at}", at), line)

    def is_driving(self, table: exp.Table) -> bool:
        return not is_table_function(table) and table_name(table) == self.driving

    def reads(self, scope: Scope) -> bool:
        """Whether evaluating ``scope`` reads the driving input (through CTEs, derived tables,
        subqueries, set operations or lateral calls)."""
        key = id(scope)
        if key not in self._reads:
            self._reads[key] = False  # a recursive CTE's reference to itself
            children = [*scope.subquery_scopes, *scope.set_operation_scopes]
            children += [*scope.derived_table_scopes, *scope.udtf_scopes]
            self._reads[key] = any(self.reads(c) for c in children) or any(
                self._read_by(scope, table) is not None for table in scope.tables
            )
        return self._reads[key]

    def _read_by(self, scope: Scope, table: exp.Table) -> exp.Table | Scope | None:
        """What a table name of ``scope``'s FROM reads of the driving input: itself, or the CTE
        it names when that reads it; None when neither."""
        cte = scope.cte_sources.get(table.name) if not table.db and not table.catalog else None
        if isinstance(cte, Scope):
            return cte if self.reads(cte) else None
        return table if self.is_driving(table) else None

    def check(self, scope: Scope) -> None:
        if id(scope) in self._checked:
            return
        self._checked.add(id(scope))
        self._recursive(scope)
        if isinstance(scope.expression, exp.SetOperation):
            self._set_operation(scope)
        else:
            self._select(scope)

    def _recursive(self, scope: Scope) -> None:
        cte = scope.expression.parent
        if not isinstance(cte, exp.CTE):
            return
        own = {t.name for t in scope.expression.find_all(exp.Table) if not t.db}
        if cte.alias in own or (
            isinstance(cte.parent, exp.With) and cte.parent.args.get("recursive")
        ):
            self.fail(
                f"the driving input {self.driving} is read by the recursive CTE {cte.alias}"
                "{at}, whose rows depend on each other: use kind full",
                cte,
            )

    def _set_operation(self, scope: Scope) -> None:
        operation, branches = scope.expression, scope.set_operation_scopes
        limit = operation.args.get("limit") or operation.args.get("offset")
        if limit is not None:
            self._limited(limit)
        modifiers = ("distinct", "side", "kind")
        if not isinstance(operation, exp.Union) or any(operation.args.get(m) for m in modifiers):
            name = type(operation).__name__.upper()
            self.fail(
                f"the driving input {self.driving} goes through {name} (its branch{{at}}), whose "
                "result depends on all of its rows: use UNION ALL, or kind full",
                branches[-1].expression,
            )
        for branch in branches:
            if not self.reads(branch):
                self.fail(
                    "the UNION ALL branch{at} does not read the driving input "
                    f"{self.driving}, so its rows would be written again on every run: build "
                    "it in a table of its own, or use kind full",
                    branch.expression,
                )
            self.check(branch)

    def _limited(self, node: exp.Expr) -> NoReturn:
        self.fail(
            f"the driving input {self.driving} goes through LIMIT{{at}}, so which rows are kept "
            "depends on all of its rows: use kind full",
            node,
        )

    def _select(self, scope: Scope) -> None:
        driving = self.driving
        for subquery in scope.subquery_scopes:
            if self.reads(subquery):
                self.fail(
                    f"the driving input {driving} is read inside a subquery{{at}}, so other rows "
                    "depend on the whole set of its rows: join it instead, or use kind full",
                    subquery.expression,
                )
        for udtf in scope.udtf_scopes:
            if self.reads(udtf):
                self.fail(
                    f"the driving input {driving} is read inside a LATERAL call{{at}}: join it "
                    "instead, or use kind full",
                    udtf.expression,
                )
        reading: list[tuple[exp.Expr, exp.Table | Scope]] = []
        for table in scope.tables:
            source = self._read_by(scope, table)
            if source is not None:
                reading.append((table, source))
        reading += [(d.expression, d) for d in scope.derived_table_scopes if self.reads(d)]
        if len(reading) > 1:
            reading = self._joined_again(scope, reading)
        if reading:
            node, source = reading[0]
            self._placed(scope.expression, node)
            if isinstance(source, Scope):
                self.check(source)
        self._modifiers(scope)

    def _joined_again(
        self, scope: Scope, reading: list[tuple[exp.Expr, exp.Table | Scope]]
    ) -> list[tuple[exp.Expr, exp.Table | Scope]]:
        """The read in FROM, when every other read of the driving input is joined to it on
        every key (kind merge: then each key's rows meet only rows of the same key, which a
        run recomputes together); else refuse."""
        first = [r for r in reading if isinstance(read_holder(r[0]).parent, exp.From)]
        again = [r for r in reading if not any(r is f for f in first)]
        provisional = self.kind == "merge" and not self.keys  # the keys are checked next
        for node, source in again:
            if len(first) != 1 or not (provisional or self._on_every_key(scope, node)):
                self.fail(
                    f"the driving input {self.driving} is read more than once (again{{at}}), so "
                    "new rows would pair with rows already written: read it once, join it "
                    "again on every key (kind merge), or use kind full",
                    node,
                )
            if isinstance(source, Scope):
                self.check(source)
        return first

    def _on_every_key(self, scope: Scope, node: exp.Expr) -> bool:
        """Whether the join that reads ``node`` matches each key's driving column in it to the
        same driving column of another source (an inner or left join, ANDed equalities)."""
        holder = read_holder(node)
        join = holder.parent
        if self.kind != "merge" or not isinstance(join, exp.Join):
            return False
        if join.side in ("RIGHT", "FULL") or join.kind in ("SEMI", "ANTI", "CROSS"):
            return False
        on = join.args.get("on")
        terms = list(on.flatten()) if isinstance(on, exp.And) else [on]
        alias = holder.alias_or_name
        matched = set()
        for term in terms:
            if not isinstance(term, exp.EQ):
                continue
            sides = [term.this, term.expression]
            tables = [side.table if isinstance(side, exp.Column) else None for side in sides]
            copies = [self.copies.copied(scope, side) for side in sides]
            if copies[0] is not None and copies[0] == copies[1] and tables.count(alias) == 1:
                matched.add(copies[0])
        return all(f"{self.driving}.{column}" in matched for _, column in self.keys)

    def _placed(self, select: exp.Expr, node: exp.Expr) -> None:
        """Refuse unless the driving rows are on the preserved side of every join of ``select``."""
        driving = self.driving
        holder = read_holder(node)  # a derived table's (...)
        if any(holder.args.get(k) for k in ("pivots", "version", "sample")):
            self.fail(
                f"the driving input {driving} is read with PIVOT, a sample or a fixed version"
                "{at}: use kind full",
                holder,
            )
        joins = list(select.args.get("joins") or [])
        parent = holder.parent
        if isinstance(parent, exp.From) and parent.parent is select:
            later = joins
        elif isinstance(parent, exp.Join) and any(parent is j for j in joins):
            if parent.side in ("LEFT", "FULL") or parent.kind in ("SEMI", "ANTI"):
                self._optional(parent)
            later = joins[[id(j) for j in joins].index(id(parent)) + 1 :]
        else:
            self.fail(
                f"the driving input {driving} is inside a parenthesised join{{at}}, which this "
                "check cannot follow: write the joins without parentheses, or use kind "
                "full",
                holder,
            )
        for join in later:
            if join.side in ("RIGHT", "FULL"):
                self._optional(join)

    def _optional(self, join: exp.Join) -> NoReturn:
        words = " ".join(w for w in (join.method, join.side, join.kind) if w) + " JOIN"
        driving = self.driving
        if join.kind in ("SEMI", "ANTI"):
            self.fail(
                f"the driving input {driving} is the filtering side of a {words}{{at}}, so "
                "other rows depend on the whole set of its rows: drive the table by another "
                "input, or use kind full",
                join,
            )
        self.fail(
            f"the driving input {driving} is on the optional side of a {words}{{at}}, so rows "
            "written without a match would change when its rows arrive: read it first (FROM "
            f"{driving} ... LEFT JOIN ...), or use kind full",
            join,
        )

    def _modifiers(self, scope: Scope) -> None:
        """A SELECT over driving rows: what its LIMIT, aggregates, windows and DISTINCT allow."""
        select, driving = scope.expression, self.driving
        limit = select.args.get("limit") or select.args.get("offset")
        if limit is not None:
            self._limited(limit)
        clock = clock_call(select)
        if clock is not None:
            self.fail(
                f"rows of the driving input {driving} depend on the clock ({called(clock)}"
                "{at}), so rows already written would keep a value a rebuild would change: "
                "use kind full",
                clock,
            )
        windows, aggregates = windows_and_aggregates(select)
        group, distinct = select.args.get("group"), select.args.get("distinct")
        if aggregates and group is None:
            self.fail(
                f"the driving input {driving} is aggregated into one row ({called(aggregates[0])}"
                "{at}), so every new row changes it: use kind full",
                aggregates[0],
            )
        if self.kind == "append":
            self._append_modifiers(group, windows, distinct, select)
            return
        if group is not None:
            sets = any(isinstance(e, GROUPING_SETS) for e in group.expressions)
            if sets or any(group.args.get(k) for k in ("all", "rollup", "cube", "grouping_sets")):
                self.fail(
                    "the GROUP BY{at} uses ALL, ROLLUP, CUBE or GROUPING SETS: list the "
                    "grouping columns, or use kind full",
                    group,
                )
            self._holds(scope, self.copies.grouped(scope, group), "the GROUP BY", group)
        for window in windows:
            construct = f"the PARTITION BY of {called(window)}"
            self._holds(scope, partition(window), construct, window)
        if distinct is not None:
            on = distinct.args.get("on")
            listed = on.expressions if isinstance(on, exp.Tuple) else select.expressions
            self._holds(scope, listed, "SELECT DISTINCT", select.expressions[0])

    def _append_modifiers(
        self,
        group: exp.Expr | None,
        windows: list[exp.Window],
        distinct: exp.Expr | None,
        select: exp.Expr,
    ) -> None:
        driving = self.driving
        if group is not None:
            self.fail(
                f"the driving input {driving} is aggregated (GROUP BY{{at}}), so new rows would "
                "change rows already written: use kind merge with keys that the GROUP BY "
                "holds, or kind full",
                group,
            )
        if windows:
            self.fail(
                f"the driving input {driving} is read through a window function "
                f"({called(windows[0])}{{at}}), so new rows would change rows already "
                "written: use kind merge with keys its PARTITION BY holds, or kind full",
                windows[0],
            )
        if distinct is not None:
            self.fail(
                f"the driving input {driving} goes through SELECT DISTINCT{{at}}, so a new row "
                "may repeat a row already written: use kind merge with keys the SELECT "
                "lists, or kind full",
                select.expressions[0],
            )

    def _holds(
        self, scope: Scope, expressions: list[exp.Expr], construct: str, node: exp.Expr
    ) -> None:
        """Refuse unless ``expressions`` hold a copy of every key's driving column."""
        copies = {self.copies.copied(scope, e) for e in expressions}
        for output, column in self.keys:
            if f"{self.driving}.{column}" not in copies:
                self.fail(
                    f"{construct}{{at}} does not hold the key {output} (a copy of "
                    f"{self.driving}.{column}), so it mixes rows of several keys: add "
                    f"{column} to it, or choose keys it holds",
                    node,
                )

    def _unfollowed(self, root: Scope) -> None:
        """Refuse a read of the driving input in no scope's FROM (inside a table function's
        call, in a scope sqlglot could not build): the walk would not see it."""
        in_scopes = {id(table) for scope in root.traverse() for table in scope.tables}
        for table in root.expression.find_all(exp.Table):
            if self.is_driving(table) and id(table) not in in_scopes:
                self.fail(
                    f"the driving input {self.driving} is read where this check cannot "
                    "follow it{at} (a table function, an expression): read it in a FROM "
                    "or JOIN, or use kind full",
                    table,
                )
