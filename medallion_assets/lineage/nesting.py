"""How deeply a SQL file may nest: past ``MAX_NESTING`` levels its parse tree is refused (the
parser, lineage and Spark's analyzer all recurse once per level), and a text whose parentheses
nest deeper is refused before it is parsed at all."""

from __future__ import annotations

from sqlglot import exp

from medallion_assets.lineage.script import SqlError

# Deepest parse tree accepted. sqlglot's parser, scope builder and generator recurse about four
# Python frames per level at worst (chained UNIONs), so 150 levels stay inside Python's default
# limit of 1,000 frames with room for the callers (a Dagster step, a code server). The deepest
# TPC-DS query is 29 levels deep.
MAX_NESTING = 150
TOO_DEEP_FIX = (
    "flatten it: move nested subqueries into CTEs (WITH name AS (...)), or split a long chain "
    "of UNIONs into CTEs of a few dozen branches each"
)


def check_parentheses(sql: str) -> None:
    """Raise ``SqlError`` when ``sql``'s parentheses nest deeper than ``MAX_NESTING``: such a
    parse tree is refused anyway, and parsing it would overflow Python's stack first."""
    depth = paren_depth(sql)
    if depth > MAX_NESTING:
        raise _too_deep(f"{depth} levels of parentheses; ")


def paren_depth(sql: str) -> int:
    """The deepest nesting of parentheses in ``sql``, those in quotes and comments left out.
    A parse of a deeper text would overflow Python's stack inside the parser, where the frames
    it unwinds report errors of their own on the console.

    >>> paren_depth("SELECT ((1)) AS x, ')(' AS y -- (((\\n FROM t /* ((( */")
    2
    """
    depth = deepest = 0
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"`":
            end = sql.find(c, i + 1)
            i = n if end < 0 else end + 1
            continue
        if sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        if sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth = max(depth - 1, 0)
        i += 1
    return deepest


def check_nesting(expression: exp.Expr) -> None:
    """Raise ``SqlError`` when the parse tree is deeper than ``MAX_NESTING`` (walked without
    recursion, so the check itself cannot overflow)."""
    stack = [(expression, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING:
            raise _too_deep("")
        stack.extend((child, depth + 1) for child in node.iter_expressions())


def _too_deep(detail: str) -> SqlError:
    return SqlError(
        f"is nested more than {MAX_NESTING} levels deep ({detail}the limit that keeps parsing "
        f"and running it safe); {TOO_DEEP_FIX}"
    )
