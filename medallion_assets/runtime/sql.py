"""Prepare a dataset's SQL for Spark: transpile from the authoring dialect and point every table
reference at the view that holds its published version.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlglot import exp

from medallion_assets.lineage.statement import parse_statement, table_name


class UnsupportedStatement(ValueError):
    """A statement kind the runtime does not execute (its lineage is still analysed)."""


def view_name(table: str) -> str:
    """Spark temp views cannot be qualified: ``silver.orders_usd`` -> ``silver__orders_usd``."""
    return table.replace(".", "__")


def spark_query(sql: str, dialect: str, target: str, views: Mapping[str, str]) -> tuple[str, str]:
    """(statement kind, Spark SQL of the query producing ``target``'s rows).

    ``views`` maps each table the SQL reads to the temp view registered for it.
    """
    statement = parse_statement(sql, dialect, target)
    if statement.query is None or statement.kind == "merge":
        raise UnsupportedStatement(
            f"{statement.kind.upper()} files are analysed for lineage but not executed: "
            "write the table's full SELECT (or CREATE TABLE ... AS / INSERT OVERWRITE)"
        )
    query = statement.query.copy()
    for table in list(query.find_all(exp.Table)):
        name = table_name(table)
        if name in views:
            alias = table.alias_or_name if table.alias else table.name
            table.replace(
                exp.Table(
                    this=exp.to_identifier(views[name]),
                    alias=exp.TableAlias(this=exp.to_identifier(alias)),
                )
            )
    if statement.target_columns:
        # CREATE VIEW v (a, b) / INSERT INTO t (a, b): the listed names, by position.
        alias = exp.TableAlias(
            this=exp.to_identifier("__target"),
            columns=[exp.to_identifier(c) for c in statement.target_columns],
        )
        query = exp.select("*").from_(exp.Subquery(this=query, alias=alias))
    return statement.kind, query.sql(dialect="spark")
