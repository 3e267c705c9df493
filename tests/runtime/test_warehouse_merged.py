"""A keyed warehouse load of a version an incremental MERGE made takes its changed keys from the
MERGE itself (``runtime.warehouse_changes``): the keys it deleted and those of the recomputed rows
that differ from the rows the version before held, with no comparison of the two whole versions.
On real Spark."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from medallion_assets.checks.validation import Change
from medallion_assets.runtime.warehouse_changes import _merged

pytestmark = pytest.mark.slow

SCHEMA = "k bigint, v string, n decimal(10,2)"


def _run(spark, held):
    lake = SimpleNamespace(read=lambda _spark, versions: held)
    return SimpleNamespace(session=spark, lake=lake)


def test_the_changed_keys_of_a_merge_are_its_deleted_and_its_changed_rows(spark):
    held = spark.createDataFrame(
        [(1, "a", 1), (2, "b", 2), (3, "c", 3), (4, None, 4), (5, "e", None)],
        SCHEMA.replace("decimal(10,2)", "bigint"),
    ).selectExpr("k", "v", "CAST(n AS decimal(10,2)) AS n")
    recomputed = spark.createDataFrame(
        [(1, "a", 1), (2, "B", 2), (4, None, 4), (5, "e", 5), (6, "f", 6)],
        SCHEMA.replace("decimal(10,2)", "bigint"),
    ).selectExpr("K", "v", "CAST(n AS decimal(10,2)) AS n")  # the SQL's own case
    gone = spark.createDataFrame([(3,)], "k bigint")
    since = SimpleNamespace(version_id="100")
    change = Change(recomputed, since, ("K",), gone)  # type: ignore[arg-type]

    keys, rows = _merged(_run(spark, held), change, "100", ("k",), ["k", "v", "n"])

    # 1 and 4 came out as they were (4's NULL too): not loaded again.
    assert sorted(keys.column("k").to_pylist()) == [2, 3, 5, 6]
    assert rows.column_names == ["k", "v", "n"]
    assert sorted(r["k"] for r in rows.to_pylist()) == [2, 5, 6]


def test_another_version_or_other_keys_take_the_comparison_of_versions(spark):
    rows = spark.createDataFrame([(1, "a", 1)], "k bigint, v string, n bigint")
    gone = spark.createDataFrame([], "k bigint")
    change = Change(rows, SimpleNamespace(version_id="100"), ("k",), gone)  # type: ignore[arg-type]
    run = _run(spark, rows)
    assert _merged(run, change, "99", ("k",), ["k", "v", "n"]) is None  # the warehouse is behind
    assert _merged(run, change, "100", ("v",), ["k", "v", "n"]) is None  # keyed otherwise
    assert _merged(run, None, "100", ("k",), ["k", "v", "n"]) is None  # a full build
