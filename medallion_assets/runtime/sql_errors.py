"""Spark's analysis errors traced back to the SQL file: its path, line and column, Spark's error
class and its message whole (the suggestion included), not "line 1 pos 98" of the statement
the runtime rewrote and ran.

Spark names the failing place by a fragment of the statement it ran and where that fragment
starts. The statement is the file's SQL with its table names rewritten, in the same order, so
the fragment's n-th occurrence there is its n-th occurrence in the file. When the fragment
cannot be found so (rewritten itself, or not in the file the same number of times), the error
still names the file, without a line.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from medallion_assets.errors import PermanentError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from medallion_assets.lineage.spark_sql import SparkScript


class SqlAnalysisError(PermanentError):
    """Spark could not analyse a table's SQL: the same SQL fails the same way on a retry."""

    error_code = "SQL_ANALYSIS"
    fix = "correct the SQL at the place named (Spark's message says what it could not use)"


def run_traced(script: SparkScript, spark: SparkSession, label: str, sql: str) -> DataFrame:
    """``script.run(spark)``; an analysis error becomes ``SqlAnalysisError`` naming ``label``
    (the file, ``sql`` its text) with the line and column of the failing place."""
    # pyspark: loaded only where Spark runs (the catalog and the CLI import this module without)
    from pyspark.errors import AnalysisException

    try:
        return script.run(spark)
    except AnalysisException as error:
        condition = error.getCondition() or ""
        contexts = error.getQueryContext()
        fragment, start = "", -1
        if contexts:
            fragment, start = contexts[0].fragment(), contexts[0].startIndex()
        ran = script.query if script.query.find(fragment) >= 0 else "\n".join(script.preamble)
        place = locate(sql, ran, fragment, start)
        where = label if place is None else f"{label}:{place[0]}:{place[1]}"
        raise SqlAnalysisError(f"{where}: {message_of(error.getMessage(), condition)}") from error


def message_of(text: str, condition: str = "") -> str:
    """Spark's message without the statement position and the plan that follow it.

    >>> message_of("[X.Y] Col `a` cannot be resolved. Did you mean one of the following? "
    ...     "[`b`]. SQLSTATE: 42703; line 1 pos 98;\\n'Project [a]\\n+- Relation", "X.Y")
    '[X.Y] Col `a` cannot be resolved. Did you mean one of the following? [`b`]. SQLSTATE: 42703'
    """
    first = text.strip().split("\n", 1)[0]
    first = re.sub(r";\s*line \d+ pos \d+;?\s*$", "", first).rstrip("; ")
    if condition and not first.startswith("["):
        first = f"[{condition}] {first}"
    return first


def locate(sql: str, ran: str, fragment: str, start: int) -> tuple[int, int] | None:
    """(line, column), 1-based, in ``sql`` of the ``fragment`` that starts at ``start`` in the
    statement ``ran``; None when it cannot be told.

    >>> locate("SELECT a,\\n  o.x\\nFROM t o", "SELECT a, o.x FROM lake.t AS o", "o.x", 10)
    (2, 3)
    """
    if not fragment or start < 0:
        return None
    wanted = fragment.lower()
    before = ran.lower()[:start].count(wanted)
    found = [m.start() for m in re.finditer(re.escape(wanted), sql.lower())]
    in_ran = ran.lower().count(wanted)
    if len(found) != in_ran or before >= len(found):
        return None
    offset = found[before]
    line = sql.count("\n", 0, offset) + 1
    return line, offset - (sql.rfind("\n", 0, offset) + 1) + 1
