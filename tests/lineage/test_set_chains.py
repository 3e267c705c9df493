"""A long chain of one set operation is read as a balanced tree of the same branches, in the
same order, with the same SQL; mixed operations and a link with its own ORDER BY stay."""

from __future__ import annotations

import sqlglot

from medallion_assets.lineage.set_chains import balance_set_chains, depth
from medallion_assets.lineage.statement import parse_statement


def _chain(n: int, op: str = "UNION ALL", tail: str = "") -> str:
    return f" {op} ".join(f"SELECT {i} AS n FROM t{i}" for i in range(n)) + tail


def test_a_chain_is_balanced_and_writes_the_same_sql():
    sql = _chain(300, tail=" ORDER BY n LIMIT 5")
    tree = sqlglot.parse_one(sql, read="spark")
    assert depth(tree) == 300
    balanced = balance_set_chains(tree)
    assert depth(balanced) <= 10
    assert balanced.sql("spark") == sql  # sqlglot writes it as it reads
    tables = [t.name for t in balanced.find_all(sqlglot.exp.Table, bfs=False)]
    assert tables == [f"t{i}" for i in range(300)]
    assert balanced.args.get("order") is not None and balanced.args.get("limit") is not None


def test_mixed_operations_are_left_as_written():
    sql = "SELECT 1 UNION SELECT 2 UNION ALL SELECT 3 INTERSECT SELECT 4 EXCEPT SELECT 5"
    tree = sqlglot.parse_one(sql, read="spark")
    before = tree.sql("spark")
    assert balance_set_chains(tree).sql("spark") == before


def test_a_long_union_reads_every_branch_and_names_columns_by_the_first():
    statement = parse_statement(_chain(500), "spark", "x.wide")
    assert set(statement.sources) == {f"t{i}" for i in range(500)}
    assert statement.query is not None and statement.query.named_selects == ["n"]
