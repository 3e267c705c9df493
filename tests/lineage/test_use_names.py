"""A USE names the tables after it as the dialect does: Snowflake's and T-SQL's databases
hold schemas, Spark's USE names one database; USE ROLE and USE WAREHOUSE name nothing."""

from __future__ import annotations

import pytest

from medallion_assets.lineage.statement import parse_statement

WRITE = "INSERT INTO o SELECT a FROM t JOIN x.u ON t.k = u.k"


@pytest.mark.parametrize(
    ("dialect", "use", "target", "sources"),
    [
        ("snowflake", "USE ROLE analyst; USE WAREHOUSE wh;", "o", ("t", "x.u")),
        ("snowflake", "USE SECONDARY ROLES ALL;", "o", ("t", "x.u")),
        ("snowflake", "USE DATABASE d; USE SCHEMA s;", "d.s.o", ("d.s.t", "d.x.u")),
        ("snowflake", "USE SCHEMA d.s;", "d.s.o", ("d.s.t", "d.x.u")),
        ("snowflake", "USE d;", "d.o", ("d.t", "d.x.u")),
        ("tsql", "USE sales;", "sales.o", ("sales.t", "sales.x.u")),
        ("spark", "USE d;", "d.o", ("d.t", "x.u")),
        ("spark", "USE DATABASE d;", "d.o", ("d.t", "x.u")),
        ("spark", "USE cat.d;", "cat.d.o", ("cat.d.t", "x.u")),
    ],
)
def test_use_names_the_tables_after_it(dialect, use, target, sources):
    statement = parse_statement(f"{use}\n{WRITE}", dialect, None)
    assert (statement.target, tuple(sorted(statement.sources))) == (target, sources)
