"""Counts over a band join computed from running counts: a SELECT that joins a window side to a
point side on equalities and a window of constant width, groups by the window side's columns and
only counts the point side's rows (``count(*)``, ``count(x)``, ``count(DISTINCT x)``, ``sum`` of a
``CASE`` of integers), e.g. every order's clickstream in the 24 hours before it:

    SELECT o.order_id, count(e.event_id) AS events_24h
    FROM orders o JOIN events e ON e.customer_id = o.customer_id
        AND e.event_ts BETWEEN o.order_ts - INTERVAL 24 HOURS AND o.order_ts
    GROUP BY o.order_id

The join pairs every order with every event in its window, so its cost is the windows' total
size: one customer with 11,000 orders and 36,000 events a day is 400 million pairs. The same
counts come from one sorted pass instead: the point rows and two probes per window row (its
window's bounds) are put in one timeline per equality key, ordered by value; a running count
at each probe counts the point rows before it, and a window's count is the count at its upper
probe less that at its lower one. The probe goes before the point rows of its own value when
the bound takes them (``>=`` a lower bound) and after when it does not (``>``).

``count(DISTINCT x)`` counts the runs of ``x`` instead: each x's rows split where two are more
than the width apart (at least the width, when a bound is strict). A window meets a run if and
only if it holds one of its rows, and meets at most one run of each x, so the distinct count is
the runs that start by its upper bound less those that ended before its lower one. It is exact
only when every window row of a group has the same window (its GROUP BY holds every window-side
column of the join), and the width is a fixed interval (on timestamps).

Only what is certainly the same query is rewritten; anything else is left as written (the band
join is then bucketed: ``range_join.py``). Pure: sqlglot only.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import SqlglotError

from medallion_assets.lineage.band_timeline import PREFIX as _P
from medallion_assets.lineage.band_timeline import Bound, Shape, timeline_query
from medallion_assets.lineage.range_join import band_window, relation_alias, sides_of, volatile


def band_sums(query: exp.Expr) -> exp.Expr:
    """A copy of ``query`` with every SELECT of that shape computed from running counts;
    ``query`` itself when the rewrite fails (an optimisation never fails a build).

    >>> from sqlglot import parse_one
    >>> sql = ("SELECT o.id, count(*) AS n FROM o JOIN e ON e.k = o.k "
    ...        "AND e.t BETWEEN o.t - INTERVAL 1 HOUR AND o.t GROUP BY o.id")
    >>> "__medallion_bs_timeline" in band_sums(parse_one(sql, dialect="spark")).sql("spark")
    True
    >>> kept = sql.replace("count(*) AS n", "count(*)")  # Spark names the column by its text
    >>> band_sums(parse_one(kept, dialect="spark")).sql("spark") == parse_one(kept).sql("spark")
    True
    """
    try:
        copied = query.copy()
        for select in list(copied.find_all(exp.Select)):
            rewritten = _rewrite(select)
            if rewritten is None:
                continue
            if select.args.get("with_") is not None:  # the CTEs the SELECT carries, at the root
                rewritten.set("with_", select.args["with_"])
            if select is copied:
                copied = rewritten
            else:
                select.replace(rewritten)
        return copied
    except (SqlglotError, ValueError, TypeError, KeyError, AttributeError):
        return query


def _rewrite(select: exp.Select) -> exp.Select | None:
    shape = _shape(select)
    if shape is None:
        return None
    group = list(select.args["group"].expressions)
    grouped = {g.sql(): at for at, g in enumerate(group)}
    outputs: list[tuple[str, str]] = []  # (SQL of the output column, its name)
    weights: list[tuple[str, str]] = []  # the point rows' weights: (expression, name)
    distinct: dict[int, exp.Column] = {}  # output position -> the column counted distinct
    for projection in select.expressions:
        name = projection.alias_or_name
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        at = len(outputs)
        if inner.sql() in grouped:
            outputs.append((f"{_P}_g{grouped[inner.sql()]}", name))
            continue
        if not isinstance(projection, exp.Alias):
            return None  # Spark names an aggregate by its text: keep the text
        weight = _weight(inner, shape)
        if weight is not None:
            weights.append((weight, f"{_P}_w{at}"))
            outputs.append((f"COALESCE(SUM({_P}_sign * {_P}_w{at}), 0)", name))
            continue
        counted = _distinct(inner, shape, group)
        if counted is None:
            return None
        distinct[at] = counted
        weights += [(f"{_P}_s{at}", f"{_P}_s{at}"), (f"{_P}_e{at}", f"{_P}_e{at}")]
        outputs.append(
            (
                f"COALESCE(MAX(CASE WHEN {_P}_sign = 1 THEN {_P}_s{at} END) "
                f"- MAX(CASE WHEN {_P}_sign = -1 THEN {_P}_e{at} END), 0)",
                name,
            )
        )
    return timeline_query(shape, group, outputs, weights, distinct)


def _shape(select: exp.Select) -> Shape | None:
    """The parts of a SELECT that joins two relations on equalities and one band and groups by
    the window side's columns; None for anything else."""
    joins = select.args.get("joins") or []
    source = select.args.get("from_") or select.args.get("from")
    group = select.args.get("group")
    if len(joins) != 1 or source is None or group is None or not group.expressions:
        return None
    if any(select.args.get(k) for k in ("where", "having", "qualify", "distinct", "windows")):
        return None
    if any(select.args.get(k) for k in ("order", "limit", "offset")):
        return None
    if any(group.args.get(k) for k in ("all", "rollup", "cube", "grouping_sets")):
        return None
    join = joins[0]
    on = join.args.get("on")
    if on is None or join.method or join.side or join.kind not in ("", "INNER"):
        return None
    names = {relation_alias(source.this): source.this, relation_alias(join.this): join.this}
    if "" in names or len(names) != 2:
        return None
    terms = list(on.flatten()) if isinstance(on, exp.And) else [on]
    shape = _parts(terms, names)
    if shape is None:
        return None
    for g in group.expressions:  # every grouped value is of the window side
        if volatile(g) or sides_of(g) != {shape.window_name} or g.find(exp.AggFunc):
            return None
    return shape


def _parts(terms: list[exp.Expr], names: dict[str, exp.Expr]) -> Shape | None:
    """The equalities and the one band of an ON condition's terms (every term used)."""
    keys: list[tuple[exp.Expr, exp.Expr]] = []
    ranges: list[list[tuple[exp.Column, str, Bound]]] = []  # each range term's readings
    for term in terms:
        term = term.unnest()
        if volatile(term) or term.find(exp.Subquery, exp.AggFunc, exp.Window):
            return None
        if isinstance(term, exp.EQ):
            left, right = term.this, term.expression
            sides = (sides_of(left), sides_of(right))
            if len(sides[0]) != 1 or len(sides[1]) != 1 or sides[0] == sides[1]:
                return None
            keys.append((left, right))
            continue
        readings = _bounds(term)
        if not readings:
            return None
        ranges.append(readings)
    chosen = _one_band(ranges)
    if chosen is None:
        return None
    value, low, high = chosen
    point_name = value.table
    window_names = sides_of(low.value) | sides_of(high.value)
    if point_name not in names or len(window_names) != 1 or point_name in window_names:
        return None
    window_name = next(iter(window_names))
    if window_name not in names:
        return None
    ordered = []
    for left, right in keys:  # each equality: (the point side's value, the window side's)
        if sides_of(left) == {point_name} and sides_of(right) == {window_name}:
            ordered.append((left, right))
        elif sides_of(right) == {point_name} and sides_of(left) == {window_name}:
            ordered.append((right, left))
        else:
            return None
    band = band_window(value, low.value, high.value, window_name)
    if band is None:
        return None
    return Shape(
        names[window_name],
        window_name,
        names[point_name],
        tuple(ordered),
        value,
        low,
        high,
        band.width,
        band.timed,
    )


def _bounds(term: exp.Expr) -> list[tuple[exp.Column, str, Bound]]:
    """The readings of a range term as a bound on a plain column: (column, "low" | "high",
    bound); ``a.x < b.y`` reads both as a high bound on a.x and a low one on b.y."""
    if isinstance(term, exp.Between) and not term.args.get("symmetric"):
        if isinstance(term.this, exp.Column):
            return [
                (term.this, "low", Bound(term.args["low"], True)),
                (term.this, "high", Bound(term.args["high"], True)),
            ]
        return []
    if not isinstance(term, exp.GTE | exp.GT | exp.LTE | exp.LT):
        return []
    inclusive = isinstance(term, exp.GTE | exp.LTE)
    larger = isinstance(term, exp.GTE | exp.GT)  # its left side is the larger one
    readings = []
    if isinstance(term.this, exp.Column):
        readings.append((term.this, "low" if larger else "high", Bound(term.expression, inclusive)))
    if isinstance(term.expression, exp.Column):
        readings.append((term.expression, "high" if larger else "low", Bound(term.this, inclusive)))
    return readings


def _one_band(
    ranges: list[list[tuple[exp.Column, str, Bound]]],
) -> tuple[exp.Column, Bound, Bound] | None:
    """The column every range term bounds, once from below and once from above, with its two
    bounds; None unless exactly one column reads so."""
    found = []
    columns = {(c.table, c.name) for readings in ranges for c, _, _ in readings}
    for column in columns:
        picked = []
        for readings in ranges:
            mine = [r for r in readings if (r[0].table, r[0].name) == column]
            if not mine:
                break
            picked += mine  # BETWEEN reads as both bounds
        else:
            lows = [r for r in picked if r[1] == "low"]
            highs = [r for r in picked if r[1] == "high"]
            if len(lows) == 1 and len(highs) == 1:
                found.append((lows[0][0], lows[0][2], highs[0][2]))
    return found[0] if len(found) == 1 else None


def _weight(aggregate: exp.Expr, shape: Shape) -> str | None:
    """A point row's weight for a count or a sum of integer cases; None for anything else."""
    if isinstance(aggregate, exp.Count) and not isinstance(aggregate.this, exp.Distinct):
        argument = aggregate.this
        if argument is None or isinstance(argument, exp.Star):
            return "1"
        if _of_point(argument, shape):
            return f"CASE WHEN {argument.sql('spark')} IS NULL THEN 0 ELSE 1 END"
        return None
    if isinstance(aggregate, exp.Sum) and isinstance(aggregate.this, exp.Case):
        case = aggregate.this
        values = [i.args.get("true") for i in case.args.get("ifs") or []]
        values.append(case.args.get("default"))
        if not all(_integer(v) for v in values) or not _of_point(case, shape):
            return None
        return case.sql("spark")
    return None


def _distinct(aggregate: exp.Expr, shape: Shape, group: list[exp.Expr]) -> exp.Column | None:
    """The point column a ``count(DISTINCT x)`` counts, when its runs count it exactly."""
    if not isinstance(aggregate, exp.Count) or not isinstance(aggregate.this, exp.Distinct):
        return None
    counted = aggregate.this.expressions
    column = counted[0] if len(counted) == 1 else None
    if not isinstance(column, exp.Column) or not shape.timed or not _of_point(column, shape):
        return None
    grouped = {g.sql() for g in group}
    joined = [w for _, w in shape.keys] + [shape.low.value, shape.high.value]
    columns = {c.sql() for e in joined for c in e.find_all(exp.Column)}
    return column if columns <= grouped else None


def _of_point(expression: exp.Expr, shape: Shape) -> bool:
    return sides_of(expression) == {shape.value.table} and not volatile(expression)


def _integer(value: exp.Expr | None) -> bool:
    return isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit()


__all__ = ["band_sums"]
