"""Staging branches that killed builds left behind are dropped at the table's next build, and
only those: a branch made a moment ago is a build in progress (real Spark writes, real Iceberg
refs through pyiceberg)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from medallion_assets.lake import Lake, versions
from medallion_assets.lake.catalog import LakeCatalog
from tests.lake_helpers import publish_frame, staging_branches

pytestmark = pytest.mark.slow  # a real Spark session


def test_only_staging_branches_left_by_killed_builds_are_dropped(
    lake_spark: Any, local_lake: LakeCatalog
):
    lake = Lake(local_lake)
    frame = lake_spark.createDataFrame([(1,)], "id INT")
    version = publish_frame(lake, lake_spark, frame, "silver.t")
    now = int(time.time())
    left = {
        f"medallion_stage_{now - 7200}_aaaaaaaaaaaa": "killed two hours ago",
        "medallion_stage_bbbbbbbbbbbb": "killed by a version whose names carried no time",
        f"medallion_stage_{now}_cccccccccccc": "a build staging now",
    }
    loaded = versions.load(versions.open_catalog(lake.catalog), "silver.t")
    with loaded.manage_snapshots() as refs:
        for name in left:
            refs.create_branch(int(version.version_id), name)

    assert lake.drop_stale_staging("silver.t") == 2
    assert staging_branches(lake, "silver.t") == [f"medallion_stage_{now}_cccccccccccc"]
    assert lake.current("silver.t") == version  # main untouched
    assert lake.clear_staging("silver.t") == 1  # healing's clear_staging: all of them
