"""An incremental table whose driving input expired the snapshot its last build read (the lake
keeps ``keep_versions`` versions of a table; a table skipped for that many of its input's
publishes, by the kill switch or a profile, finds its snapshot gone) is rebuilt in full,
automatically, saying why, and equals a full build. Real Spark and Iceberg."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_assets.lake import Lake
from tests.runtime.small_project import small_project
from tests.runtime.test_merge_keys import FILES, TABLE, build, land

pytestmark = pytest.mark.slow


def test_a_driving_input_expired_past_the_last_read_snapshot_rebuilds_in_full(
    spark, tmp_path: Path
):
    catalog, _ = small_project(tmp_path, "expired", FILES)
    lake = Lake.local(tmp_path / "lake", keep_versions=2)
    land(spark, lake, "a", [1, 2])
    build(catalog, lake, spark)
    land(spark, lake, "b", [3])
    assert build(catalog, lake, spark).metadata["built"].startswith("merged 1 recomputed rows")
    read = lake.current(TABLE).inputs["bronze.orders"]
    for name, order in (("c", 4), ("d", 5), ("e", 6)):  # the table is not built meanwhile
        land(spark, lake, name, [order])
    assert read not in {str(v.snapshot_id) for v in lake.history("bronze.orders")}
    rebuilt = build(catalog, lake, spark)
    said = rebuilt.metadata["built"]
    assert said.startswith("in full: bronze.orders no longer holds version ") and read in said
    assert "expired" in said
    rows = sorted(r.order_id for r in lake.read_current(spark, TABLE).collect())
    assert rows == [1, 2, 3, 4, 5, 6]
    land(spark, lake, "f", [7])  # and the next build is incremental again
    assert build(catalog, lake, spark).metadata["built"].startswith("merged 1 recomputed rows")
