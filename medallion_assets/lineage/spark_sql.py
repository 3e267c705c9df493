"""Prepare a dataset's SQL for Spark: transpile from the authoring dialect, point every table
reference at the view that holds its published version, and give band joins a bucket key
(``range_join``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from medallion_assets.lineage.band_sums import band_sums
from medallion_assets.lineage.range_join import bucket_band_joins
from medallion_assets.lineage.script import Script, spark_preamble, spark_sql
from medallion_assets.lineage.statement import Statement, parse_script, table_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class UnsupportedStatement(ValueError):
    """A statement kind the runtime does not execute (its lineage is still analysed)."""


@dataclass(frozen=True)
class SparkScript:
    kind: str  # the statement kind of the file's write
    preamble: tuple[str, ...]  # run first, in order: temporary views, functions, variables
    query: str  # the rows of the table
    by_position: bool = False  # an INSERT without a column list: it writes the table's columns

    def run(self, spark: SparkSession) -> DataFrame:
        """Run the preamble in ``spark``, then return the query's DataFrame."""
        for statement in self.preamble:
            spark.sql(statement)
        return spark.sql(self.query)


def view_name(table: str) -> str:
    """Spark temp views cannot be qualified, so a table's view joins its parts with ``__``.

    >>> view_name("silver.orders_usd")
    'silver__orders_usd'
    """
    return table.replace(".", "__")


def spark_query(sql: str, dialect: str, target: str, views: Mapping[str, str]) -> tuple[str, str]:
    """(statement kind, Spark SQL of the query producing ``target``'s rows), for SQL without a
    preamble (a rule's assertion); a dataset's file goes through ``spark_script``."""
    script = spark_script(sql, dialect, target, views)
    if script.preamble:
        raise UnsupportedStatement("only one statement is allowed here: remove the preamble")
    return script.kind, script.query


def spark_script(
    sql: str,
    dialect: str,
    target: str,
    views: Mapping[str, str],
    parsed: tuple[Script, Statement] | None = None,
) -> SparkScript:
    """The preamble and query producing ``target``'s rows, in Spark SQL.

    ``views`` maps each table the SQL reads to the temp view registered for it; ``parsed``:
    the file's ``parse_script(..., inline=False)`` when the caller has it already.
    """
    script, statement = parsed or parse_script(sql, dialect, target, inline=False)
    if statement.query is None or statement.kind == "merge":
        # MERGE runs through runtime.merge; INSERT ... VALUES has no query to run.
        raise UnsupportedStatement(
            f"{statement.kind.upper()} files are analysed for lineage but not executed: "
            "write the table's full SELECT (or CREATE TABLE ... AS / INSERT OVERWRITE)"
        )
    preamble = [read_views(s, views) for s in spark_preamble(script, dialect)]
    preamble = [bucket_band_joins(band_sums(s)) for s in preamble]
    query = bucket_band_joins(band_sums(read_views(statement.query, views)))
    if statement.target_columns:
        # CREATE VIEW v (a, b) / INSERT INTO t (a, b): the listed names, by position.
        alias = exp.TableAlias(
            this=exp.to_identifier("__target"),
            columns=[exp.to_identifier(c) for c in statement.target_columns],
        )
        query = exp.select("*").from_(exp.Subquery(this=query, alias=alias))
    by_position = statement.kind.startswith("insert") and not statement.target_columns
    preamble_sql = tuple(spark_sql(s) for s in preamble)
    return SparkScript(statement.kind, preamble_sql, query.sql(dialect="spark"), by_position)


def read_views(expression: exp.Expr, views: Mapping[str, str]) -> exp.Expr:
    """A copy of ``expression`` whose table references read the registered views."""
    expression = expression.copy()
    for table in list(expression.find_all(exp.Table)):
        if isinstance(table.parent, exp.UserDefinedFunction) or table is expression.this:
            continue  # a function's or a temporary view's own name
        name = table_name(table)
        if name in views:
            alias = table.alias_or_name if table.alias else table.name
            table.replace(
                exp.Table(
                    this=exp.to_identifier(views[name]),
                    alias=exp.TableAlias(this=exp.to_identifier(alias)),
                )
            )
    return expression
