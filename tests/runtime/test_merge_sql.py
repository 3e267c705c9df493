"""The translation of MERGE INTO into Spark SQL, without Spark: clauses read from each dialect,
Spark's cardinality rule, the columns a first build gets, and clear errors."""

from __future__ import annotations

import doctest

import pytest

from medallion_assets.lineage import merge_clauses
from medallion_assets.lineage.statement import SqlError
from medallion_assets.runtime.merge import spark_merge
from medallion_assets.runtime.merge_sql import defined_columns_sql

VIEWS = {"bronze.customers": "bronze__customers"}


def spec_of(sql: str, dialect: str = "spark"):
    statement, _preamble = spark_merge(sql, dialect, "silver.current", VIEWS)
    return merge_clauses.merge_spec(statement)


def clauses(sql: str, dialect: str = "spark") -> list[tuple[str, str, bool]]:
    return [(c.region, c.action, c.condition is not None) for c in spec_of(sql, dialect).clauses]


def test_clauses_of_every_region_are_read_in_order():
    sql = """MERGE INTO silver.current t USING bronze.customers s ON t.id = s.id
    WHEN MATCHED AND s.deleted THEN DELETE WHEN MATCHED THEN UPDATE SET *
    WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE"""
    assert clauses(sql) == [
        ("matched", "delete", True),
        ("matched", "update", False),
        ("not_matched", "insert", False),
        ("not_matched_by_source", "delete", False),
    ]


@pytest.mark.parametrize(
    ("dialect", "sql", "expected"),
    [
        (
            "tsql",
            "MERGE silver.current AS t USING bronze.customers AS s ON t.id = s.id "
            "WHEN NOT MATCHED BY TARGET THEN INSERT (id) VALUES (s.id) "
            "WHEN NOT MATCHED BY SOURCE THEN DELETE;",
            [("not_matched", "insert", False), ("not_matched_by_source", "delete", False)],
        ),
        (
            "postgres",
            "MERGE INTO silver.current t USING bronze.customers s ON t.id = s.id "
            "WHEN MATCHED THEN DO NOTHING WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name)",
            [("matched", "nothing", False), ("not_matched", "insert", False)],
        ),
        (
            "bigquery",
            "MERGE silver.current t USING bronze.customers s ON t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT ROW",
            [("not_matched", "insert", False)],
        ),
    ],
)
def test_clauses_are_read_in_each_dialect(dialect, sql, expected):
    assert clauses(sql, dialect) == expected


def test_the_source_table_is_read_from_its_view_and_columns_use_the_aliases():
    spec = spec_of(
        "MERGE INTO silver.current USING bronze.customers ON current.id = bronze.customers.id "
        "WHEN NOT MATCHED THEN INSERT (id) VALUES (customers.id)"
    )
    assert spec.source_sql == "SELECT * FROM bronze__customers"
    assert (spec.target_alias, spec.source_alias) == ("current", "customers")
    assert spec.on.sql("spark") == "current.id = customers.id"


def test_a_first_build_takes_inserted_columns_then_columns_only_an_update_sets():
    spec = spec_of(
        "MERGE INTO silver.current t USING bronze.customers s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET seen = t.seen + 1, name = s.name "
        "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (id, upper(s.name))"
    )
    sql = defined_columns_sql(spec, ["id", "name"])
    assert sql == (
        "SELECT s.id AS `id`, UPPER(s.name) AS `name`, NULL + 1 AS `seen` "
        "FROM (SELECT * FROM bronze__customers) AS `s` WHERE false"
    )


def test_update_set_star_adds_no_columns_beside_an_insert_list():
    spec = spec_of(
        "MERGE INTO silver.current t USING bronze.customers s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)"
    )
    assert defined_columns_sql(spec, ["id", "name"]).startswith("SELECT s.id AS `id` FROM")


def test_a_merge_that_names_no_column_cannot_build_its_first_version():
    spec = spec_of(
        "MERGE INTO silver.current t USING bronze.customers s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name)",
    )
    with pytest.raises(SqlError, match=r"INSERT \(a, b\) VALUES"):
        defined_columns_sql(spec, ["id", "name"])


def test_an_insert_with_more_values_than_columns_is_an_error():
    with pytest.raises(SqlError, match=r"2 column.*3 value"):
        spec_of(
            "MERGE INTO silver.current t USING bronze.customers s ON t.id = s.id "
            "WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name, 1)"
        )


def test_the_examples_in_the_docstrings_hold():
    assert doctest.testmod(merge_clauses).failed == 0
