"""A computed column's type is derived from the types of what it reads, as Spark would give it,
and left unknown when it cannot be certain (never guessed)."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from medallion_assets.lineage.columns import query_columns
from medallion_assets.lineage.types import infer_type

ORDERS = {
    "silver.orders": {
        "order_id": "bigint",
        "country": "string",
        "amount": "decimal(18,2)",
        "rate": "decimal(18,8)",
        "ordered_at": "timestamp",
        "score": "double",
    }
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("upper(trim(country))", "string"),
        ("nullif(upper(country), '')", "string"),
        ("to_date(ordered_at)", "date"),
        ("datediff(to_date(ordered_at), current_date())", "int"),
        ("year(ordered_at)", "int"),  # sqlglot says tinyint; Spark's date parts are ints
        ("country IS NOT NULL", "boolean"),
        ("country = 'GB'", "boolean"),
        ("count(DISTINCT country)", "bigint"),
        ("amount * rate", "decimal"),  # Spark's precision rules: the family only
        ("coalesce(amount, 0)", "decimal"),
        ("avg(score)", "double"),
        ("CASE WHEN score > 0 THEN 1 ELSE 0 END", "int"),
        ("CAST(amount AS DECIMAL(10, 2))", "decimal(10, 2)"),
        ("'a literal'", "string"),
        ("order_id", "bigint"),  # a bare column keeps its type
        # not certain: left unknown
        ("unknown_function(country)", None),
        ("element_at(array(score), 1) + (SELECT max(x) FROM other)", None),
    ],
)
def test_a_computed_columns_type(expression: str, expected: str | None):
    query = sqlglot.parse_one(f"SELECT {expression} AS c FROM silver.orders", read="spark")
    [column] = query_columns(query, ORDERS)
    assert column.origin.type == expected


def test_a_column_of_unknown_type_makes_an_arithmetic_result_unknown():
    e = sqlglot.parse_one("amount + 1", read="spark")
    assert infer_type(e, {id(c): None for c in e.find_all(exp.Column)}) is None
