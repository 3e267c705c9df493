"""Band joins made equi-joins: an inner join whose condition bounds one side's value by a window
of constant width around the other side's (``e.ts BETWEEN o.ts - INTERVAL 24 HOURS AND o.ts``,
``e.x >= o.y - 5 AND e.x < o.y + 5``) is given a bucket key, so Spark joins on it instead of
comparing every pair that shares the other keys (or every pair, when there are none).

Spark plans such a join as a hash join on the equality keys alone and filters afterwards: one
customer with 12,000 orders and 115,000 events is 1.4 billion comparisons, whatever the window.
The rewrite cuts the value axis into buckets as wide as the window: each row of the point
side falls in one bucket, each row of the window side is repeated for the (at most two)
buckets its window touches, and the join gains ``point.bucket = window.bucket``. Every
original predicate stays, so the rows are exactly those of the original join: a pair that
matches has its point in one of the window's buckets (the bucket is a non-decreasing function
of the value), and in only one, so no pair is joined twice.

Only what is certainly the same query is rewritten: an inner join, both sides single
relations with a name, the window's bounds the same expression of the other side plus or
minus constants, and no ``*`` in that SELECT (the bucket column would show). Pure: sqlglot only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import count

from sqlglot import exp, parse_one
from sqlglot.errors import SqlglotError

BUCKET = "__medallion_band"

_MICROS = {
    "microsecond": 1,
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
    "day": 86_400_000_000,
    "week": 7 * 86_400_000_000,
}
_DATE_ADD = (exp.DateAdd, exp.TsOrDsAdd, exp.TimestampAdd, exp.DatetimeAdd)
_DATE_SUB = (exp.DateSub, exp.TimestampSub, exp.DatetimeSub)
_VOLATILE = re.compile(
    r"\b(?:RAND|RANDN|RANDOM|RANDSTR|UNIFORM|UUID|SHUFFLE|MONOTONICALLY_INCREASING_ID|"
    r"SPARK_PARTITION_ID|INPUT_FILE_NAME|CURRENT_\w+|NOW)\s*\(",
    re.I,
)
_PART = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+?)s?\b", re.I)


@dataclass(frozen=True)
class Band:
    """``point`` (an expression of relation ``point_side``) lies between ``low`` and ``high``
    (expressions of relation ``window_side``), ``width`` apart: microseconds when ``timed``."""

    point: exp.Expr
    point_side: str
    low: exp.Expr
    high: exp.Expr
    window_side: str
    width: float
    timed: bool


def bucket_band_joins(query: exp.Expr) -> exp.Expr:
    """A copy of ``query`` with every band join it certainly may rewrite given a bucket key;
    ``query`` itself when the rewrite fails (an optimisation never fails a build).

    >>> sql = "SELECT a.k FROM a JOIN b ON b.k = a.k AND b.t BETWEEN a.t - INTERVAL 1 DAY AND a.t"
    >>> query = bucket_band_joins(parse_one(sql, dialect="spark"))
    >>> print(query.args["joins"][0].args["on"].sql("spark"))  # doctest: +NORMALIZE_WHITESPACE
    b.__medallion_band_1 = a.__medallion_band_1
    AND (b.k = a.k AND b.t BETWEEN a.t - INTERVAL '1' DAY AND a.t)
    >>> print(query.args["joins"][0].this.sql("spark"))  # doctest: +NORMALIZE_WHITESPACE
    (SELECT *, UNIX_MICROS(CAST(b.t AS TIMESTAMP)) DIV 86400000000 AS __medallion_band_1
    FROM b) AS b
    """
    try:
        return _bucketed(query.copy())
    except (SqlglotError, ValueError, TypeError, KeyError, AttributeError):
        return query


def _bucketed(query: exp.Expr) -> exp.Expr:
    numbers = count(1)
    wrapped: dict[int, exp.Select] = {}  # id of a relation's holder -> its bucket SELECT
    for select in list(query.find_all(exp.Select)):
        if any(_is_star(e) for e in select.expressions):
            continue
        joins = select.args.get("joins") or []
        source = select.args.get("from_") or select.args.get("from")
        if not joins or source is None or any(j.method for j in joins):
            continue  # NATURAL joins match on every common name, the bucket's too
        relations = {relation_alias(source.this): source}
        relations |= {relation_alias(j.this): j for j in joins}
        for join in joins:
            on = join.args.get("on")
            if on is None or join.side or join.kind not in ("", "INNER"):
                continue
            band = _band(on, {name for name in relations if name})
            if band is None:
                continue
            name = f"{BUCKET}_{next(numbers)}"
            _add_bucket(relations[band.point_side], _bucket(band, band.point, name), wrapped)
            _add_bucket(relations[band.window_side], _buckets(band, name), wrapped)
            key = exp.EQ(
                this=exp.column(name, table=band.point_side),
                expression=exp.column(name, table=band.window_side),
            )
            join.set("on", exp.and_(key, on))
    return query


def volatile(expression: exp.Expr) -> bool:
    """Whether ``expression`` may give another value each time it is evaluated."""
    return bool(_VOLATILE.search(expression.sql("spark")))


def _is_star(projection: exp.Expr) -> bool:
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
    )


def relation_alias(relation: exp.Expr) -> str:
    """The name a single relation (a table or a subquery) is known by, "" for anything else."""
    if isinstance(relation, exp.Table | exp.Subquery) and relation.alias_or_name:
        return (
            relation.alias_or_name
            if not isinstance(relation, exp.Table)
            else _table_alias(relation)
        )
    return ""


def _table_alias(table: exp.Table) -> str:
    if table.args.get("joins") or isinstance(table.this, exp.Func):
        return ""  # a table function or a parenthesised join
    return table.alias or table.name


def sides_of(expression: exp.Expr) -> set[str]:
    """The relations an expression's columns name (an unqualified column: "?")."""
    return {c.table or "?" for c in expression.find_all(exp.Column)}


def _band(on: exp.Expr, names: set[str]) -> Band | None:
    """The first band in ``on``'s conjunction between two of ``names``."""
    bounds: dict[tuple[str, str], tuple[exp.Expr, list[exp.Expr], list[exp.Expr]]] = {}
    for predicate in on.flatten() if isinstance(on, exp.And) else [on]:
        for point, low, high in _bounds(predicate):
            point_sides = sides_of(point)
            sides = sides_of(low if low is not None else high)  # type: ignore[arg-type]
            if len(point_sides) != 1 or len(sides) != 1 or not (point_sides | sides) <= names:
                continue
            key = (point.sql(), next(iter(sides)))
            if point_sides == sides:
                continue
            found = bounds.setdefault(key, (point, [], []))
            if low is not None:
                found[1].append(low)
            if high is not None:
                found[2].append(high)
    for (_, window_side), (point, lows, highs) in bounds.items():
        for low in lows:
            for high in highs:
                band = band_window(point, low, high, window_side)
                if band is not None:
                    return band
    return None


def _bounds(predicate: exp.Expr) -> list[tuple[exp.Expr, exp.Expr | None, exp.Expr | None]]:
    """(point, low, high) of a range predicate, either bound None when it has only one."""
    if isinstance(predicate, exp.Between) and not predicate.args.get("symmetric"):
        return [(predicate.this, predicate.args["low"], predicate.args["high"])]
    if isinstance(predicate, exp.GTE | exp.GT):
        return [
            (predicate.this, predicate.expression, None),
            (predicate.expression, None, predicate.this),
        ]
    if isinstance(predicate, exp.LTE | exp.LT):
        return [
            (predicate.this, None, predicate.expression),
            (predicate.expression, predicate.this, None),
        ]
    return []


def band_window(point: exp.Expr, low: exp.Expr, high: exp.Expr, side: str) -> Band | None:
    """The band when ``low`` and ``high`` are one expression plus constants, of one kind."""
    if any(volatile(e) for e in (point, low, high)):
        return None  # evaluated twice (bucket and predicate), it could differ between the two
    low_base, low_offset, low_timed = bound_offset(low)
    high_base, high_offset, high_timed = bound_offset(high)
    if low_base.sql() != high_base.sql() or low_offset is None or high_offset is None:
        return None
    timed = low_timed or high_timed
    if (low_timed and high_offset and not high_timed) or (
        high_timed and low_offset and not low_timed
    ):
        return None  # an interval on one bound and a number on the other: not one axis
    width = high_offset - low_offset
    if width <= 0:
        return None
    return Band(point, next(iter(sides_of(point))), low, high, side, width, timed)


def bound_offset(bound: exp.Expr) -> tuple[exp.Expr, float | None, bool]:
    """(base, constant added, whether the constant is an interval) of ``base ± constant``."""
    if isinstance(bound, exp.Paren):
        return bound_offset(bound.this)
    if isinstance(bound, (*_DATE_ADD, *_DATE_SUB)):  # date_add(d, 7), timestamp_sub(t, ...)
        amount, unit = _number(bound.expression), bound.args.get("unit")
        length = _MICROS.get(unit.name.lower().rstrip("s") if unit else "day")
        if amount is not None and length is not None:
            sign = 1 if isinstance(bound, _DATE_ADD) else -1
            return bound.this, sign * amount * length, True
    if isinstance(bound, exp.Add | exp.Sub):
        sign = 1 if isinstance(bound, exp.Add) else -1
        micros = _interval_micros(bound.expression)
        if micros is not None:
            return bound.this, sign * micros, True
        number = _number(bound.expression)
        if number is not None:
            return bound.this, sign * number, False
    return bound, 0.0, False


def _number(node: exp.Expr) -> float | None:
    """The value of a constant number expression (``7``, ``-7``, ``7 * -1``, ``'1'`` as an
    interval's amount), or None."""
    if isinstance(node, exp.Literal):
        try:
            return float(node.this)
        except ValueError:
            return None
    if isinstance(node, exp.Paren):
        return _number(node.this)
    if isinstance(node, exp.Neg):
        inner = _number(node.this)
        return None if inner is None else -inner
    if isinstance(node, exp.Mul):
        left, right = _number(node.this), _number(node.expression)
        return None if left is None or right is None else left * right
    return None


def _interval_micros(node: exp.Expr) -> float | None:
    """Microseconds of an interval of fixed length (not months or years), or None."""
    if not isinstance(node, exp.Interval):
        return None
    unit = node.args.get("unit")
    text = str(node.this.name if isinstance(node.this, exp.Literal) else "")
    if unit is not None:
        text = f"{text} {unit.name}"
    parts = _PART.findall(text)
    if not parts or _PART.sub("", text).strip():
        return None
    total = 0.0
    for amount, name in parts:
        micros = _MICROS.get(name.lower())
        if micros is None:
            return None
        total += float(amount) * micros
    return total


def _bucket(band: Band, value: exp.Expr, name: str | None = None) -> exp.Expr:
    """The bucket of ``value``: a non-decreasing function of it."""
    sql = value.sql("spark")
    if band.timed:
        bucket = parse_one(
            f"UNIX_MICROS(CAST({sql} AS TIMESTAMP)) DIV {int(band.width)}", dialect="spark"
        )
    else:
        # Clamped into BIGINT's range (a huge or infinite value shares the last bucket; NaN,
        # larger than any number to Spark, too): still non-decreasing, and never an overflow.
        scaled = f"CAST({sql} AS DOUBLE) / {band.width!r}"
        bucket = parse_one(
            f"CAST(FLOOR(LEAST(GREATEST({scaled}, -9.0E18), 9.0E18)) AS BIGINT)", dialect="spark"
        )
    return bucket if name is None else exp.alias_(bucket, name)


def _buckets(band: Band, name: str) -> exp.Expr:
    """One row per bucket the window side's window touches."""
    low, high = _bucket(band, band.low).sql("spark"), _bucket(band, band.high).sql("spark")
    return exp.alias_(parse_one(f"EXPLODE(SEQUENCE({low}, {high}))", dialect="spark"), name)


def _add_bucket(holder: exp.Expr, bucket: exp.Expr, wrapped: dict[int, exp.Select]) -> None:
    """Give the relation in ``holder`` (the FROM or a JOIN) the bucket column: it becomes
    ``(SELECT *, bucket FROM relation AS name) AS name``, or the column joins that SELECT
    when an earlier band gave the relation one."""
    if id(holder) in wrapped:
        wrapped[id(holder)].select(bucket, copy=False)
        return
    relation = holder.this
    inner = exp.select("*", bucket).from_(relation.copy())
    alias = exp.TableAlias(this=exp.to_identifier(relation_alias(relation)))
    holder.set("this", exp.Subquery(this=inner, alias=alias))
    wrapped[id(holder)] = inner
