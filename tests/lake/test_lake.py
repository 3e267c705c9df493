"""The lake object the pipeline writes through (``medallion_assets.lake.Lake``), on real
Iceberg tables: a session serving several lakes, whole-table and daily rewrites, refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from medallion_assets.lake import Lake, OldLakeLayout, Produced
from medallion_assets.lake.records import RowsOutsideTheDay

pytestmark = pytest.mark.slow

SCHEMA = "event_id bigint, event_date string, event_type string"


def frame(spark: Any, *rows: tuple[int, str, str]) -> Any:
    return spark.createDataFrame(list(rows), SCHEMA)


def put(lake: Lake, spark: Any, table: str, data: Any, day: str | None = None, **kw: Any) -> Any:
    staged = lake.stage(
        spark,
        data,
        table,
        Produced("code-1", {"bronze.events": "1"}),
        partition=day,
        partition_column="event_date" if day else None,
        **kw,
    )
    return lake.publish(spark, staged)


def ids(lake: Lake, spark: Any, table: str, day: str | None = None) -> list[int]:
    found = lake.current_versions(table, [day] if day else None)
    return sorted(r["event_id"] for r in lake.read(spark, found).collect()) if found else []


def test_one_session_writes_two_lakes_one_after_the_other(spark: Any, tmp_path: Path):
    first, second = Lake.local(tmp_path / "a" / "lake"), Lake.local(tmp_path / "b" / "lake")
    put(first, spark, "silver.t", frame(spark, (1, "d", "x")))
    put(second, spark, "silver.t", frame(spark, (2, "d", "x"), (3, "d", "x")))
    assert ids(first, spark, "silver.t") == [1]  # attached back to the first lake's catalog
    assert ids(second, spark, "silver.t") == [2, 3]
    assert (tmp_path / "a" / "lake" / "catalog.db").is_file()  # the embedded catalog inside


def test_a_whole_table_rewrite_replaces_every_row_even_with_none(spark: Any, tmp_path: Path):
    lake = Lake.local(tmp_path / "lake")
    put(lake, spark, "gold.t", frame(spark, (1, "d", "x"), (2, "d", "x")))
    version = put(lake, spark, "gold.t", frame(spark))
    assert version.rows == 0 and ids(lake, spark, "gold.t") == []
    assert lake.current("gold.t") == version  # the empty version is current, not none


def test_a_column_whose_type_changed_is_rewritten_with_the_new_type(spark: Any, tmp_path: Path):
    lake = Lake.local(tmp_path / "lake")
    put(lake, spark, "gold.t", frame(spark, (1, "d", "x")))
    changed = spark.createDataFrame(
        [(1.5, "d", 7)], "event_id double, event_date string, event_type int"
    )
    put(lake, spark, "gold.t", changed)
    row = lake.read(spark, [lake.current("gold.t")]).collect()[0]
    assert (row["event_id"], row["event_type"]) == (1.5, 7)


def test_an_append_to_a_day_adds_rows_and_counts_the_days_rows(spark: Any, tmp_path: Path):
    lake = Lake.local(tmp_path / "lake")
    put(lake, spark, "bronze.e", frame(spark, (1, "2026-01-01", "x")), "2026-01-01")
    put(lake, spark, "bronze.e", frame(spark, (5, "2026-01-02", "x")), "2026-01-02")
    added = put(
        lake, spark, "bronze.e", frame(spark, (2, "2026-01-01", "y")), "2026-01-01", mode="append"
    )
    assert added.rows == 2 and ids(lake, spark, "bronze.e", "2026-01-01") == [1, 2]
    assert lake.current("bronze.e", "2026-01-02").rows == 1


def test_a_days_build_with_rows_of_another_day_is_refused_and_changes_nothing(
    spark: Any, tmp_path: Path
):
    lake = Lake.local(tmp_path / "lake")
    put(lake, spark, "silver.e", frame(spark, (1, "2026-01-01", "x")), "2026-01-01")
    put(lake, spark, "silver.e", frame(spark, (5, "2026-01-05", "x")), "2026-01-05")
    misfiled = frame(spark, (2, "2026-01-01", "x"), (3, "2026-01-05", "x"), (4, None, "x"))
    with pytest.raises(RowsOutsideTheDay, match=r"silver\.e\[2026-01-01\]: 2 of the rows built"):
        put(lake, spark, "silver.e", misfiled, "2026-01-01")
    assert ids(lake, spark, "silver.e", "2026-01-05") == [5]  # the other day untouched
    assert ids(lake, spark, "silver.e", "2026-01-01") == [1]
    assert lake.clear_staging("silver.e") == 0  # its branch went with the refusal


def test_a_day_rebuilt_with_no_rows_is_empty_and_other_days_keep_theirs(spark: Any, tmp_path: Path):
    lake = Lake.local(tmp_path / "lake")
    put(lake, spark, "silver.e", frame(spark, (1, "2026-01-01", "x")), "2026-01-01")
    put(lake, spark, "silver.e", frame(spark, (2, "2026-01-02", "x")), "2026-01-02")
    empty = put(lake, spark, "silver.e", frame(spark), "2026-01-01")
    assert empty.rows == 0 and ids(lake, spark, "silver.e", "2026-01-01") == []
    assert ids(lake, spark, "silver.e", "2026-01-02") == [2]


def test_keep_versions_expires_older_snapshots_at_publish(spark: Any, tmp_path: Path):
    lake = Lake.local(tmp_path / "lake", keep_versions=2)
    for i in range(4):
        put(lake, spark, "gold.t", frame(spark, (i, "d", "x")))
    history = lake.history("gold.t")
    assert len(history) == 2 and history[0].current
    assert ids(lake, spark, "gold.t") == [3]


def test_staging_branches_left_by_killed_attempts_are_dropped_without_a_jvm(
    spark: Any, tmp_path: Path
):
    lake = Lake.local(tmp_path / "lake")
    put(lake, spark, "gold.t", frame(spark, (1, "d", "x")))
    for _ in range(2):  # staged, never published nor discarded: as after kill -9
        lake.stage(spark, frame(spark, (9, "d", "x")), "gold.t", Produced("code-2"))
    assert lake.clear_staging("gold.t") == 2
    assert lake.clear_staging("gold.t") == 0
    assert ids(lake, spark, "gold.t") == [1]
    assert lake.clear_staging("gold.never_built") == 0


def test_a_lake_folder_in_the_old_layout_gets_one_line_saying_how_to_rebuild(tmp_path: Path):
    root = tmp_path / "lake"
    (root / "silver" / "orders" / "versions" / "v1").mkdir(parents=True)
    (root / "silver" / "orders" / "CURRENT").write_text('{"version": "v1"}')
    with pytest.raises(OldLakeLayout) as error:
        Lake.local(root).check_layout()
    message = str(error.value)
    assert "\n" not in message and "folder layout of before the Iceberg lake" in message
    assert "silver/orders/CURRENT" in message and "rebuild" in message
    Lake.local(tmp_path / "fresh").check_layout()  # a new or Iceberg lake passes


def test_nothing_published_reads_as_none_without_creating_a_catalog(tmp_path: Path):
    lake = Lake.local(tmp_path / "lake")
    assert lake.current("gold.t") is None and lake.partitions("gold.t") == []
    assert lake.history("gold.t") == [] and not (tmp_path / "lake").exists()


def test_a_merge_writes_deletes_for_the_rows_it_changes_and_every_reader_agrees(
    spark: Any, tmp_path: Path
):
    lake = Lake.local(tmp_path / "lake")
    put(lake, spark, "silver.m", frame(spark, *[(i, "d", "view") for i in range(1, 6)]))
    frame(spark, (2, "d", "click"), (9, "d", "view")).createOrReplaceTempView("lake_changes")
    staged = lake.stage_sql(
        spark,
        "silver.m",
        "MERGE INTO {target} t USING lake_changes c ON t.event_id = c.event_id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        Produced("merge-1"),
    )
    assert staged.rows == 6  # five, one updated, one inserted
    version = lake.publish(spark, staged)
    assert version.rows == 6 and version.code_version == "merge-1"
    summaries = spark.sql("SELECT summary FROM lake.silver.m.snapshots").collect()
    assert any(int(s[0].get("added-position-deletes", 0)) == 1 for s in summaries)  # not rewritten
    # The MERGE's own snapshot carries the summary (no empty append after it), and the
    # session's settings that put it there are gone.
    head = dict(summaries[-1][0])
    assert head.get("added-position-deletes") == "1" and head["medallion.code-version"] == "merge-1"
    by_spark = sorted(tuple(r) for r in lake.read(spark, [version]).collect())
    by_pyiceberg = sorted(tuple(r.values()) for r in lake.read_arrow([version]).to_pylist())
    assert by_spark == by_pyiceberg and (2, "d", "click") in by_spark and len(by_spark) == 6
    setting = "spark.sql.iceberg.snapshot-property.medallion.code-version"
    assert spark.conf.get(setting, None) is None


def test_a_merge_that_changes_nothing_still_publishes_what_produced_it(spark: Any, tmp_path: Path):
    lake = Lake.local(tmp_path / "lake")
    put(lake, spark, "silver.m", frame(spark, (1, "d", "view")))
    frame(spark, (7, "d", "view")).where("event_id < 0").createOrReplaceTempView("no_changes")
    staged = lake.stage_sql(
        spark,
        "silver.m",
        "MERGE INTO {target} t USING no_changes c ON t.event_id = c.event_id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        Produced("merge-2"),
    )
    version = lake.publish(spark, staged)
    assert version.rows == 1 and version.code_version == "merge-2"
