"""What a SELECT does to the rows it reads, in the terms the incremental checks use
(``driving_reads.py``): its windows and aggregates, its reads of the clock, a window's
PARTITION BY, the function a node calls, and what a read sits in a FROM or JOIN as."""

from __future__ import annotations

import re

from sqlglot import exp

# Spark aggregates sqlglot does not model (it parses them as anonymous calls), and *_agg ones.
AGGREGATE_NAME = re.compile(
    r"^(every|some|any|try_sum|try_avg|histogram_numeric|count_min_sketch|product|std|mean|"
    r"percentile\w*)$|_agg|agg_|agg$"
)
GROUPING_SETS = (exp.Rollup, exp.Cube, exp.GroupingSets)
CLOCK: tuple[type[exp.Expr], ...] = (exp.CurrentDate, exp.CurrentTimestamp, exp.CurrentTime)
CLOCK += (exp.CurrentDatetime, exp.CurrentTimestampLTZ, exp.Localtimestamp, exp.Localtime)
CLOCK_NAME = re.compile(  # the clock's other names, which sqlglot parses as anonymous calls
    r"^(now|today|getdate|getutcdate|sysdate|sysdatetime|systimestamp|unix_timestamp|"
    r"transaction_timestamp|statement_timestamp|clock_timestamp|current_\w+|localtime\w*)$"
)


def read_holder(node: exp.Expr) -> exp.Expr:
    """What a read sits in a FROM or JOIN as: a table, or a derived table's parentheses."""
    return node.parent if isinstance(node, exp.Query) and node.parent is not None else node


def windows_and_aggregates(select: exp.Expr) -> tuple[list[exp.Window], list[exp.Expr]]:
    """The window functions and aggregates a SELECT computes itself (not its subqueries')."""

    def prune(node: exp.Expr) -> bool:
        own = (exp.Query, exp.Subquery, exp.Window, exp.From, exp.Join, exp.With)
        return node is not select and (isinstance(node, own) or node.arg_key == "windows")

    windows: list[exp.Window] = []
    aggregates: list[exp.Expr] = []
    for node in select.walk(prune=prune):
        if isinstance(node, exp.Window) and node.arg_key != "windows":
            windows.append(node)
        elif isinstance(node, exp.AggFunc) or (
            isinstance(node, exp.Anonymous) and AGGREGATE_NAME.search(node.name.lower())
        ):
            aggregates.append(node)
    return windows, aggregates


def clock_call(select: exp.Expr) -> exp.Expr | None:
    """A call reading the clock in a SELECT's own clauses (its subqueries' are theirs)."""
    prune = (exp.Query, exp.Subquery)
    for node in select.walk(prune=lambda n: n is not select and isinstance(n, prune)):
        named = isinstance(node, exp.Anonymous) and CLOCK_NAME.match(node.name.lower())
        if isinstance(node, CLOCK) or named or (isinstance(node, exp.StrToUnix) and not node.this):
            return node  # StrToUnix without an argument: unix_timestamp(), now
    return None


def partition(window: exp.Window) -> list[exp.Expr]:
    """A window's PARTITION BY (the parser writes a named window's out in each ``OVER``)."""
    return list(window.args.get("partition_by") or [])


def called(node: exp.Expr) -> str:
    """The function a window or an aggregate calls, as written in Spark: ``row_number``."""
    function = node.this if isinstance(node, exp.Window) else node
    return function.sql("spark").split("(", 1)[0].lower()
