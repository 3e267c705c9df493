"""A load of only the changed keys, on DuckDB and a real PostgreSQL server: the table ends as a
whole-version load would leave it (a changed key replaced, a dropped key gone, an untouched
row kept), the ledger moves to the new version, and a warehouse that does not hold the base
version is refused before anything changed."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from medallion_assets.io.warehouse_changes import NotAtBase
from tests.io.test_warehouse import contents, lake_unit, orders, target

MERGE = target("merge", ("order_id",))


def keys(*ids: int) -> pa.Table:
    return pa.table({"order_id": pa.array(ids, pa.int64())})


def test_only_the_changed_keys_are_staged_and_the_table_equals_the_new_version(warehouse):
    base = lake_unit(3, "v1")
    warehouse.load(MERGE, orders((1, "ann", "10.00"), (2, "bob", "20.00"), (3, "cy", "5.00")), base)
    assert warehouse.loaded_version(MERGE) == "v1"
    # v2: order 2 changed, order 3 gone, order 4 new; order 1 untouched.
    rows = orders((2, "bob", "21.00"), (4, "dee", "7.00"))
    report = warehouse.load_changes(MERGE, rows, keys(2, 3, 4), lake_unit(3, "v2"), "v1")

    assert contents(warehouse) == [
        (1, "ann", Decimal("10.00")),
        (2, "bob", Decimal("21.00")),
        (4, "dee", Decimal("7.00")),
    ]
    assert (report.rows_staged, report.rows_in_table, report.expected_rows) == (2, 3, 3)
    assert report.reconciled and warehouse.loaded_version(MERGE) == "v2"
    assert warehouse.held(MERGE, lake_unit(3, "v2")) is not None


@pytest.mark.parametrize("held", [None, "v0"])
def test_a_warehouse_without_the_base_version_is_refused_and_left_as_it_was(warehouse, held):
    if held is not None:
        warehouse.load(MERGE, orders((1, "ann", "10.00")), lake_unit(1, held))
    before = contents(warehouse) if held is not None else None
    with pytest.raises(NotAtBase, match="does not hold version v1"):
        warehouse.load_changes(
            MERGE, orders((1, "ann", "11.00")), keys(1), lake_unit(1, "v2"), "v1"
        )
    if held is not None:
        assert contents(warehouse) == before and warehouse.loaded_version(MERGE) == held


def test_changes_that_break_the_keys_are_refused_before_the_warehouse_changes(warehouse):
    warehouse.load(MERGE, orders((1, "ann", "10.00")), lake_unit(1, "v1"))
    twice = orders((2, "bob", "1.00"), (2, "bob", "2.00"))
    with pytest.raises(ValueError, match="not unique"):
        warehouse.load_changes(MERGE, twice, keys(2), lake_unit(2, "v2"), "v1")
    assert contents(warehouse) == [(1, "ann", Decimal("10.00"))]
    assert warehouse.loaded_version(MERGE) == "v1"
