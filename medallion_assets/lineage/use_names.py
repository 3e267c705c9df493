"""The names a ``USE`` gives the tables of the statements after it.

Where a database holds schemas (Snowflake, T-SQL), ``USE [DATABASE] d`` and ``USE SCHEMA s``
(or ``USE SCHEMA d.s``) set the two levels apart: after both, ``t`` is ``d.s.t`` and ``x.t``
is ``d.x.t``. Elsewhere (Spark, Hive, MySQL, BigQuery) a ``USE`` names the one database (or
``catalog.database``) an unqualified ``t`` is in. ``USE ROLE`` and ``USE WAREHOUSE`` name
nothing. Temporary objects and CTE names stay as written.
"""

from __future__ import annotations

from sqlglot import exp

from medallion_assets.lineage.script import Script

# Dialects whose databases hold schemas.
_THREE_LEVELS = frozenset({"snowflake", "tsql"})


def qualify_for_use(script: Script, dialect: str = "") -> None:
    """Qualify, in place, the tables of ``script`` that a ``USE`` before them names."""
    levels = dialect in _THREE_LEVELS
    database, schema = "", ""  # schema: the whole name where databases do not hold schemas
    temporary: set[str] = set()
    for statement in [*(p.expression for p in script.preamble), script.main]:
        part = next((p for p in script.preamble if p.expression is statement), None)
        if part is not None and part.kind in ("use", "use_database"):
            names = part.name.split(".")
            if not levels:
                schema = part.name
            elif part.kind == "use_database" or (not statement.text("kind") and len(names) < 2):
                database, schema = part.name, ""
            else:  # USE SCHEMA s, USE SCHEMA d.s
                database, schema = (names[0], names[1]) if len(names) > 1 else (database, names[0])
            continue
        if database or schema:
            _qualify(statement, database, schema, temporary)
        if part is not None and part.name:
            temporary.add(part.name)


def _qualify(statement: exp.Expr, database: str, schema: str, temporary: set[str]) -> None:
    ctes = {cte.alias_or_name for cte in statement.find_all(exp.CTE)}
    for table in statement.find_all(exp.Table):
        name = table.name
        if table.args.get("catalog") or name in temporary or name in ctes or not name:
            continue
        if isinstance(table.parent, exp.UserDefinedFunction):
            continue
        if table.args.get("db"):  # schema.table: in the database
            if database:
                table.set("catalog", exp.to_identifier(database))
            continue
        parts = [*([database] if database else []), *schema.split(".")] if schema else [database]
        table.set("db", exp.to_identifier(parts[-1]))
        if len(parts) > 1:
            table.set("catalog", exp.to_identifier(parts[-2]))
