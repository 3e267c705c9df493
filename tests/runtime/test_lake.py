"""The lake publishes atomically: readers see the previous version or the new one, never a
half-written one, and a crash between staging and publish leaves the previous version current."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from medallion_assets.lake import Lake


def stage(lake: Lake, table: str, rows: list[int], partition: str | None = None) -> Path:
    staging = lake.new_staging(table, partition)
    staging.mkdir(parents=True)
    pq.write_table(pa.table({"x": rows}), staging / "part-0.parquet")
    return staging


def read(lake: Lake, table: str) -> list[int]:
    return sorted(
        x for path in lake.current_paths(table) for x in pq.read_table(path)["x"].to_pylist()
    )


def test_publish_makes_the_staged_output_current(tmp_path: Path):
    lake = Lake(tmp_path)
    assert lake.current("gold.t") is None
    version = lake.publish(stage(lake, "gold.t", [1, 2]), "gold.t", None, "c1", {"a": "v1"}, 2)
    assert lake.current("gold.t") == version
    assert read(lake, "gold.t") == [1, 2]
    assert version.inputs == {"a": "v1"} and version.code_version == "c1"


def test_a_crash_between_staging_and_publish_keeps_the_previous_version(tmp_path: Path):
    class Crash(Exception):
        pass

    def crash(step: str) -> None:
        raise Crash(step)

    lake = Lake(tmp_path)
    first = lake.publish(stage(lake, "gold.t", [1]), "gold.t", None, "c1", {}, 1)
    crashing = Lake(tmp_path, on_publish=crash)
    with pytest.raises(Crash):
        crashing.publish(stage(crashing, "gold.t", [9, 9, 9]), "gold.t", None, "c2", {}, 3)
    assert lake.current("gold.t") == first
    assert read(lake, "gold.t") == [1]


def test_older_versions_are_kept_up_to_the_configured_count(tmp_path: Path):
    lake = Lake(tmp_path, keep_versions=2)
    for n in range(4):
        last = lake.publish(stage(lake, "gold.t", [n]), "gold.t", None, "c", {}, 1)
    versions = lake.versions("gold.t")
    assert len(versions) == 2 and last.version_id in versions
    assert read(lake, "gold.t") == [3]


def test_partitions_are_published_and_read_independently(tmp_path: Path):
    lake = Lake(tmp_path)
    lake.publish(stage(lake, "silver.e", [1], "2026-01-01"), "silver.e", "2026-01-01", "c", {}, 1)
    lake.publish(stage(lake, "silver.e", [2], "2026-01-02"), "silver.e", "2026-01-02", "c", {}, 1)
    assert lake.partitions("silver.e") == ["2026-01-01", "2026-01-02"]
    assert read(lake, "silver.e") == [1, 2]
    lake.publish(stage(lake, "silver.e", [5], "2026-01-01"), "silver.e", "2026-01-01", "c", {}, 1)
    assert read(lake, "silver.e") == [2, 5]


def test_failed_attempts_leave_staging_that_clear_staging_removes(tmp_path: Path):
    lake = Lake(tmp_path)
    stage(lake, "gold.t", [1])
    stage(lake, "gold.t", [2])
    assert lake.current("gold.t") is None
    assert lake.clear_staging("gold.t") == 2
    assert lake.clear_staging("gold.t") == 0


def test_blocked_outputs_lists_unpublished_rejections_per_partition_until_a_later_publish(
    tmp_path: Path,
):
    from medallion_assets.checks.results import CheckResult, ChecksFailed, Validation
    from medallion_assets.checks.validation import blocked_outputs, record_rejection
    from medallion_assets.control.store import ControlStore

    lake = Lake(tmp_path)
    ledger = ControlStore.open(f"sqlite:///{tmp_path}/control.db").checks
    failed = CheckResult("in_list", "accepted_values", "error", False, 3, 9, "3 of 9 rows ...")
    warned = CheckResult("fresh", "freshness", "warn", False, 9, 9, "old")
    old = lake.publish(
        stage(lake, "silver.t", [1], "2026-01-01"), "silver.t", "2026-01-01", "c", {}, 1
    )
    for day in ("2026-01-01", "2026-01-02"):  # the second day was never published
        staging = stage(lake, "silver.t", [2], day)
        rejection = ChecksFailed("silver.t", day, Validation((failed, warned)), staging, None)
        record_rejection(ledger, rejection, "c", {})
        lake.keep_rejected(staging)

    blocked = {b.partition: b for b in blocked_outputs(ledger, lake, "silver.t")}
    assert set(blocked) == {"2026-01-01", "2026-01-02"}
    assert blocked["2026-01-01"].current == old and blocked["2026-01-02"].current is None
    assert [c.name for c in blocked["2026-01-01"].failures] == ["in_list"]  # blocking ones only
    assert blocked["2026-01-02"].as_dict()["current_version"] is None
    assert blocked["2026-01-02"].staging == str(staging)  # where the rejected output is kept

    # A later build of the first day passed and was published: its rejection is history.
    lake.publish(stage(lake, "silver.t", [3], "2026-01-01"), "silver.t", "2026-01-01", "c", {}, 1)
    assert [b.partition for b in blocked_outputs(ledger, lake, "silver.t")] == ["2026-01-02"]
    assert blocked_outputs(ledger, lake, "silver.other") == []


def test_a_table_reading_its_own_previous_version_is_reusable_when_its_other_inputs_are(
    tmp_path: Path,
):
    lake = Lake(tmp_path)
    first = lake.publish(stage(lake, "silver.m", [1]), "silver.m", None, "c1", {"b.x": "v1"}, 1)
    inputs = {"b.x": "v1", "silver.m": first.version_id}
    second = lake.publish(stage(lake, "silver.m", [1]), "silver.m", None, "c1", inputs, 1)
    assert lake.reusable("silver.m", None, "c1", {"b.x": "v1"}, "silver.m") == second
    assert lake.reusable("silver.m", None, "c1", {"b.x": "v2"}, "silver.m") is None
    assert lake.reusable("silver.m", None, "c1", {"b.x": "v1"}) is None
    assert lake.reusable("silver.m", None, "c2", {"b.x": "v1"}, "silver.m") is None
