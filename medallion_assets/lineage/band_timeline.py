"""The query ``band_sums.py`` puts in place of a band join that only counts: one timeline per
equality key of the point side's rows and two probes per window row (its window's bounds),
ordered by value, the running sum of each count's weight along it, and each group's counts from
its probes (the upper probe's running sum less the lower one's).

A probe sorts before the point rows of its own value when its bound takes them from below
(``>=``) or not from above (``<``), after them otherwise. Only the point rows whose keys some
window row has are read into the timeline. Pure: SQL text for sqlglot to parse.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp, parse_one

PREFIX = "__medallion_bs"  # the rewrite's own names
_P = PREFIX


@dataclass(frozen=True)
class Bound:
    value: exp.Expr  # an expression of the window side
    inclusive: bool


@dataclass(frozen=True)
class Shape:
    """A SELECT the rewrite applies to, taken apart."""

    window: exp.Expr  # the window side's relation (a table or a subquery), with its alias
    window_name: str
    point: exp.Expr  # the point side's relation
    keys: tuple[tuple[exp.Expr, exp.Expr], ...]  # (point side's, window side's) equal values
    value: exp.Column  # the point side's column the window bounds
    low: Bound
    high: Bound
    width: float  # microseconds when timed
    timed: bool


def timeline_query(
    shape: Shape,
    group: list[exp.Expr],
    outputs: list[tuple[str, str]],
    weights: list[tuple[str, str]],
    distinct: dict[int, exp.Column],
) -> exp.Select:
    """The rewritten SELECT: the timeline of point rows and probes, the running sums of every
    weight (``(expression, name)`` of a point row) over it, and each group's counts from its
    probes."""
    point = shape.value.table
    keys = [f"{_P}_k{i}" for i in range(len(shape.keys))]
    groups = [f"{_P}_g{i}" for i in range(len(group))]
    value = shape.value.sql("spark")
    present = [f"{p.sql('spark')} IS NOT NULL" for p, _ in shape.keys] + [f"{value} IS NOT NULL"]
    point_keys = [f"{p.sql('spark')} AS {k}" for (p, _), k in zip(shape.keys, keys, strict=True)]
    rows = (
        f"SELECT {', '.join([*point_keys, f'{value} AS {_P}_t', f'{point}.*'])} "
        f"FROM {shape.point.sql('spark')}{_of_windowed_keys(shape, keys)} "
        f"WHERE {' AND '.join(present)}"
    )
    runs = "".join(_runs(shape, column, at, keys) for at, column in distinct.items())
    named = [name for _, name in weights]
    point_branch = (
        f"SELECT {', '.join([*keys, f'{_P}_t', f'1 AS {_P}_place', f'0 AS {_P}_sign'])}"
        + "".join(f", NULL AS {g}" for g in groups)
        + f", 1 AS {_P}_rows"
        + "".join(f", {sql} AS {name}" for sql, name in weights)
        + f" FROM (SELECT *{runs} FROM ({rows}) AS {point}) AS {point}"
    )
    window_keys = [f"{w.sql('spark')} AS {k}" for (_, w), k in zip(shape.keys, keys, strict=True)]
    window_held = [f"{w.sql('spark')} IS NOT NULL" for _, w in shape.keys]
    probes = []
    for bound, sign, before in (
        (shape.low, -1, shape.low.inclusive),
        (shape.high, 1, not shape.high.inclusive),
    ):
        columns = [*window_keys, f"{bound.value.sql('spark')} AS {_P}_t"]
        columns += [f"{0 if before else 2} AS {_P}_place", f"{sign} AS {_P}_sign"]
        columns += [f"{g.sql('spark')} AS {n}" for g, n in zip(group, groups, strict=True)]
        columns += [f"0 AS {_P}_rows", *(f"0 AS {n}" for n in named)]
        held = [*window_held, f"({bound.value.sql('spark')}) IS NOT NULL"]
        probes.append(
            f"SELECT {', '.join(columns)} FROM {shape.window.sql('spark')} "
            f"WHERE {' AND '.join(held)}"
        )
    timeline = " UNION ALL ".join(f"({branch})" for branch in [point_branch, *probes])
    partition = f"PARTITION BY {', '.join(keys)} " if keys else ""
    over = (
        f"({partition}ORDER BY {_P}_t, {_P}_place ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    )
    sums = ", ".join(f"SUM({n}) OVER {over} AS {n}" for n in [f"{_P}_rows", *named])
    running = (
        f"SELECT {', '.join([*groups, f'{_P}_sign'])}, {sums} FROM ({timeline}) AS {_P}_timeline"
    )
    projections = ", ".join(f"{sql} AS {_quoted(name)}" for sql, name in outputs)
    sql = (
        f"SELECT {projections} FROM ({running}) AS {_P}_running WHERE {_P}_sign <> 0 "
        f"GROUP BY {', '.join(groups)} HAVING SUM({_P}_sign * {_P}_rows) > 0"
    )
    parsed = parse_one(sql, dialect="spark")
    assert isinstance(parsed, exp.Select)
    return parsed


def _of_windowed_keys(shape: Shape, keys: list[str]) -> str:
    """A semi-join keeping the point rows whose keys some window row has: the others meet no
    window, and an incremental build's few window rows then sort only their keys' rows."""
    if not shape.keys:
        return ""
    held = [f"{w.sql('spark')} IS NOT NULL" for _, w in shape.keys]
    distinct = ", ".join(
        f"{w.sql('spark')} AS {k}" for (_, w), k in zip(shape.keys, keys, strict=True)
    )
    on = " AND ".join(
        f"{p.sql('spark')} = {_P}_keys.{k}" for (p, _), k in zip(shape.keys, keys, strict=True)
    )
    return (
        f" LEFT SEMI JOIN (SELECT DISTINCT {distinct} FROM {shape.window.sql('spark')} "
        f"WHERE {' AND '.join(held)}) AS {_P}_keys ON {on}"
    )


def _runs(shape: Shape, column: exp.Column, at: int, keys: list[str]) -> str:
    """The point rows' run flags for ``count(DISTINCT column)``: a run of a value starts where
    the value's row before (of the same keys) is further than the width, and ends where the
    row after is (at least the width when a bound is strict)."""
    near = "<=" if shape.low.inclusive and shape.high.inclusive else "<"
    by = ", ".join([*keys, column.sql("spark")])
    ordered = f"OVER (PARTITION BY {by} ORDER BY {_P}_t)"
    micros = f"UNIX_MICROS(CAST({_P}_t AS TIMESTAMP))"
    flags = []
    for name, neighbour, gap in (
        (f"{_P}_s{at}", "LAG", f"{micros} - UNIX_MICROS(CAST(LAG({_P}_t) {ordered} AS TIMESTAMP))"),
        (
            f"{_P}_e{at}",
            "LEAD",
            f"UNIX_MICROS(CAST(LEAD({_P}_t) {ordered} AS TIMESTAMP)) - {micros}",
        ),
    ):
        flags.append(
            f", CASE WHEN {column.sql('spark')} IS NULL THEN 0 "
            f"WHEN {neighbour}({_P}_t) {ordered} IS NOT NULL AND {gap} {near} {int(shape.width)} "
            f"THEN 0 ELSE 1 END AS {name}"
        )
    return "".join(flags)


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("spark")


__all__ = ["PREFIX", "Bound", "Shape", "timeline_query"]
