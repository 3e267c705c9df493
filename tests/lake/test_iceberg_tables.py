"""Write-audit-publish on real Iceberg tables (Spark's JDBC catalog on SQLite, warehouse in a
folder), read back without a JVM by pyiceberg."""

from __future__ import annotations

import json
from typing import Any

import pytest

from medallion_assets.lake import snapshots, tables, versions
from medallion_assets.lake.catalog import LakeCatalog

pytestmark = pytest.mark.slow

SCHEMA = "event_id bigint, event_date string, event_type string"


def events(spark: Any, *rows: tuple[int, str, str]) -> Any:
    return spark.createDataFrame(list(rows), SCHEMA)


def produced_by(run: str, day: str | None = None, **inputs: str) -> dict[str, str]:
    props = {"run-id": run, "code-version": "code-1", "inputs": json.dumps(inputs)}
    return {**props, "partition": day} if day else props


def day_write(spark: Any, day: str, run: str, *ids: int) -> tables.Staged:
    frame = events(spark, *[(i, day, "view") for i in ids])
    return tables.stage(
        spark,
        frame,
        "silver.events",
        mode="replace",
        partition=day,
        partition_column="event_date",
        properties=produced_by(run, day, **{"bronze.events": "41"}),
        refs=spark.medallion_refs,
    )


def main_rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in spark.table(tables.identifier(table)).collect())


def test_a_staged_write_is_read_exactly_and_invisible_on_main_until_published(lake_spark: Any):
    first = tables.stage(
        lake_spark,
        events(lake_spark, (1, "d", "a")),
        "gold.t",
        mode="replace",
        properties=produced_by("run-1"),
        refs=lake_spark.medallion_refs,
    )
    tables.publish(lake_spark, first, refs=lake_spark.medallion_refs)
    second = tables.stage(
        lake_spark,
        events(lake_spark, (2, "d", "b"), (3, "d", "c")),
        "gold.t",
        mode="replace",
        properties=produced_by("run-2"),
        refs=lake_spark.medallion_refs,
    )
    assert tables.read_staged(lake_spark, second).count() == 2
    assert main_rows(lake_spark, "gold.t") == [(1, "d", "a")]  # readers still see run 1
    tables.publish(lake_spark, second, refs=lake_spark.medallion_refs)
    assert main_rows(lake_spark, "gold.t") == [(2, "d", "b"), (3, "d", "c")]
    refs = {
        r[0]
        for r in lake_spark.sql(f"SELECT name FROM {tables.identifier('gold.t')}.refs").collect()
    }
    assert refs == {"main"}  # the staging branches are gone


def test_publishing_onto_an_unmoved_main_is_one_catalog_commit(
    lake_spark: Any, local_lake: LakeCatalog
):
    """main moved, the day tagged and the staging branch dropped together: one new metadata
    file, so a reader (or a kill) never sees main moved with its day untagged."""
    tables.publish(
        lake_spark, day_write(lake_spark, "2026-01-01", "run-0", 1), refs=lake_spark.medallion_refs
    )
    staged = day_write(lake_spark, "2026-01-02", "run-1", 2)
    catalog = versions.open_catalog(local_lake)
    before = catalog.load_table("silver.events").metadata
    head = tables.publish(lake_spark, staged, refs=lake_spark.medallion_refs)
    after = catalog.load_table("silver.events").metadata
    assert head == staged.snapshot_id == after.current_snapshot_id
    assert len(after.metadata_log) == len(before.metadata_log) + 1
    refs = {name: ref.snapshot_id for name, ref in after.refs.items()}
    assert staged.branch in before.refs and staged.branch not in refs
    assert refs[tables.day_tag("2026-01-02")] == staged.snapshot_id
    assert refs["main"] == staged.snapshot_id


def test_days_staged_side_by_side_both_publish_and_each_keeps_its_version(
    lake_spark: Any, local_lake: LakeCatalog
):
    tables.publish(
        lake_spark, day_write(lake_spark, "2026-01-01", "run-0", 1), refs=lake_spark.medallion_refs
    )
    # Two steps stage two days from the same head; the second publish is rebased (cherry-pick).
    jan2 = day_write(lake_spark, "2026-01-02", "run-a", 2, 3)
    jan3 = day_write(lake_spark, "2026-01-03", "run-b", 4)
    tables.publish(lake_spark, jan2, refs=lake_spark.medallion_refs)
    tables.publish(lake_spark, jan3, refs=lake_spark.medallion_refs)
    assert [r[0] for r in main_rows(lake_spark, "silver.events")] == [1, 2, 3, 4]
    catalog = versions.open_catalog(local_lake)
    assert versions.partitions(catalog, "silver.events") == [
        "2026-01-01",
        "2026-01-02",
        "2026-01-03",
    ]
    version = versions.current(catalog, "silver.events", "2026-01-03")
    assert version is not None
    assert (version.run_id, version.code_version, version.partition) == (
        "run-b",
        "code-1",
        "2026-01-03",
    )
    assert version.inputs == {"bronze.events": "41"}
    assert version.version_id == str(jan3.snapshot_id)


def test_rewriting_a_day_replaces_only_that_day_and_is_idempotent(lake_spark: Any):
    tables.publish(
        lake_spark, day_write(lake_spark, "2026-01-01", "r", 1), refs=lake_spark.medallion_refs
    )
    tables.publish(
        lake_spark, day_write(lake_spark, "2026-01-02", "r", 2), refs=lake_spark.medallion_refs
    )
    for _ in range(2):
        tables.publish(
            lake_spark,
            day_write(lake_spark, "2026-01-02", "r", 5, 6),
            refs=lake_spark.medallion_refs,
        )
    assert [r[0] for r in main_rows(lake_spark, "silver.events")] == [1, 5, 6]


def test_a_days_rows_are_written_by_every_task_that_holds_them(lake_spark: Any):
    # Iceberg's default for a partitioned table shuffles a day's rows into one task first.
    frame = events(lake_spark, *[(i, "2026-01-03", "view") for i in range(40)]).repartition(2)
    staged = tables.stage(
        lake_spark,
        frame,
        "silver.spread",
        mode="replace",
        partition="2026-01-03",
        partition_column="event_date",
        properties=produced_by("r", "2026-01-03"),
        refs=lake_spark.medallion_refs,
    )
    summary = lake_spark.sql(
        f"SELECT summary FROM {tables.identifier('silver.spread')}.snapshots "
        f"WHERE snapshot_id = {staged.snapshot_id}"
    ).first()[0]
    assert summary["added-data-files"] == "2" and summary["added-records"] == "40"


def test_the_same_day_changed_since_staging_is_a_commit_conflict(lake_spark: Any):
    tables.publish(
        lake_spark, day_write(lake_spark, "2026-01-01", "r", 1), refs=lake_spark.medallion_refs
    )
    mine = day_write(lake_spark, "2026-01-02", "mine", 2)
    theirs = day_write(lake_spark, "2026-01-02", "theirs", 3)
    tables.publish(lake_spark, theirs, refs=lake_spark.medallion_refs)
    with pytest.raises(tables.CommitConflict, match=r"silver\.events: another writer changed"):
        tables.publish(lake_spark, mine, refs=lake_spark.medallion_refs)
    assert [r[0] for r in main_rows(lake_spark, "silver.events")] == [1, 3]


def test_a_rejected_write_stays_readable_under_its_tag_and_main_does_not_move(lake_spark: Any):
    tables.publish(
        lake_spark, day_write(lake_spark, "2026-01-01", "good", 1), refs=lake_spark.medallion_refs
    )
    bad = day_write(lake_spark, "2026-01-01", "bad", 1, 1)
    tag = tables.keep_rejected(bad, "2026-01-01", refs=lake_spark.medallion_refs)
    assert main_rows(lake_spark, "silver.events") == [(1, "2026-01-01", "view")]
    kept = lake_spark.sql(
        f"SELECT * FROM {tables.identifier('silver.events')} VERSION AS OF '{tag}'"
    )
    assert kept.count() == 2


def test_history_lists_mains_snapshots_and_rollback_makes_an_earlier_one_current(
    lake_spark: Any, local_lake: LakeCatalog
):
    for run, ids in (("run-1", (1,)), ("run-2", (1, 2))):
        frame = events(lake_spark, *[(i, "d", "x") for i in ids])
        tables.publish(
            lake_spark,
            tables.stage(
                lake_spark,
                frame,
                "gold.h",
                mode="replace",
                properties=produced_by(run),
                refs=lake_spark.medallion_refs,
            ),
            refs=lake_spark.medallion_refs,
        )
    catalog = versions.open_catalog(local_lake)
    newest, oldest = versions.history(catalog, "gold.h")[:2]
    assert (newest.run_id, newest.rows, newest.current) == ("run-2", 2, True)
    assert (oldest.run_id, oldest.rows, oldest.current) == ("run-1", 1, False)
    snapshots.rollback(lake_spark, "gold.h", oldest.snapshot_id)
    assert main_rows(lake_spark, "gold.h") == [(1, "d", "x")]
    current = versions.current(catalog, "gold.h")
    assert current is not None and current.run_id == "run-1"


def test_expiry_keeps_the_newest_snapshots_and_every_days_published_version(
    lake_spark: Any, local_lake: LakeCatalog
):
    for run in ("r1", "r2", "r3", "r4"):
        tables.publish(
            lake_spark, day_write(lake_spark, "2026-01-02", run, 2), refs=lake_spark.medallion_refs
        )
    tables.publish(
        lake_spark, day_write(lake_spark, "2026-01-01", "r5", 1), refs=lake_spark.medallion_refs
    )
    snapshots.expire(lake_spark, "silver.events", keep=2)
    catalog = versions.open_catalog(local_lake)
    assert len(versions.history(catalog, "silver.events")) == 2
    kept = versions.current(catalog, "silver.events", "2026-01-02")
    assert kept is not None and kept.run_id == "r4"


def test_a_new_column_evolves_the_schema_and_older_rows_read_null(lake_spark: Any):
    first = events(lake_spark, (1, "d", "a"))
    tables.publish(
        lake_spark,
        tables.stage(lake_spark, first, "bronze.e", mode="append", refs=lake_spark.medallion_refs),
        refs=lake_spark.medallion_refs,
    )
    wider = lake_spark.createDataFrame([(2, "d", "b", "mobile")], f"{SCHEMA}, device string")
    tables.publish(
        lake_spark,
        tables.stage(lake_spark, wider, "bronze.e", mode="append", refs=lake_spark.medallion_refs),
        refs=lake_spark.medallion_refs,
    )
    assert main_rows(lake_spark, "bronze.e") == [(1, "d", "a", None), (2, "d", "b", "mobile")]


def test_pyiceberg_reads_the_rows_spark_published_without_a_jvm(
    lake_spark: Any, local_lake: LakeCatalog
):
    tables.publish(
        lake_spark, day_write(lake_spark, "2026-01-01", "r", 1, 2), refs=lake_spark.medallion_refs
    )
    arrow = versions.read(versions.open_catalog(local_lake), "silver.events")
    assert sorted(arrow.column("event_id").to_pylist()) == [1, 2]
    assert sorted(arrow.column("event_id").to_pylist()) == [
        r[0] for r in main_rows(lake_spark, "silver.events")
    ]


def test_rollback_to_a_snapshot_the_table_does_not_have_names_the_newest_ones(lake_spark: Any):
    staged = tables.stage(
        lake_spark,
        events(lake_spark, (1, "d", "a")),
        "gold.r",
        mode="replace",
        refs=lake_spark.medallion_refs,
    )
    head = tables.publish(lake_spark, staged, refs=lake_spark.medallion_refs)
    with pytest.raises(snapshots.UnknownSnapshot, match=rf"gold\.r has no snapshot 42 .*{head}"):
        snapshots.rollback(lake_spark, "gold.r", 42)
    assert main_rows(lake_spark, "gold.r") == [(1, "d", "a")]


def test_the_lake_object_stages_checks_publishes_reuses_and_reads_a_day(
    lake_spark: Any, local_lake: LakeCatalog
):
    from medallion_assets.lake import Lake, Produced

    lake = Lake(local_lake, keep_versions=2)
    produced = Produced("code-1", {"bronze.events": "7"}, "run-1")
    for day, ids in (("2026-01-01", (1, 2)), ("2026-01-02", (3,))):
        frame = events(lake_spark, *[(i, day, "view") for i in ids])
        staged = lake.stage(
            lake_spark, frame, "silver.ev", produced, partition=day,
            partition_column="event_date",
        )  # fmt: skip
        assert (
            staged.frame.count() == staged.rows == len(ids)
        )  # the checks read exactly the staged day
        version = lake.publish(lake_spark, staged)
        assert (version.partition, version.rows, version.run_id) == (day, len(ids), "run-1")
    assert lake.is_partitioned("silver.ev") and lake.partitions("silver.ev") == [
        "2026-01-01",
        "2026-01-02",
    ]
    day_one = lake.reusable("silver.ev", "2026-01-01", "code-1", {"bronze.events": "7"})
    assert day_one is not None
    assert lake.reusable("silver.ev", "2026-01-01", "code-2", {"bronze.events": "7"}) is None
    assert [r[0] for r in lake.read(lake_spark, [day_one]).collect()] == [1, 2]
    arrow = lake.read_arrow(lake.current_versions("silver.ev"))
    assert sorted(arrow.column("event_id").to_pylist()) == [1, 2, 3]
    # A write its checks reject stays readable where keep_rejected says, main unchanged.
    bad = lake.stage(
        lake_spark, events(lake_spark, (9, "2026-01-01", "x")), "silver.ev", produced,
        partition="2026-01-01", partition_column="event_date",
    )  # fmt: skip
    kept = lake.keep_rejected(lake_spark, bad)
    query = f"SELECT event_id FROM {kept} WHERE event_date = '2026-01-01'"
    assert [r[0] for r in lake_spark.sql(query).collect()] == [9]
    assert lake.current("silver.ev", "2026-01-01") == day_one


def test_a_merge_runs_as_icebergs_own_on_a_staged_branch(lake_spark: Any):
    first = events(lake_spark, (1, "d", "view"), (2, "d", "view"))
    tables.publish(
        lake_spark,
        tables.stage(lake_spark, first, "silver.m", mode="replace", refs=lake_spark.medallion_refs),
        refs=lake_spark.medallion_refs,
    )
    changes = events(lake_spark, (2, "d", "click"), (3, "d", "view"))
    changes.createOrReplaceTempView("medallion_changes")
    staged = tables.stage_sql(
        lake_spark,
        "silver.m",
        "MERGE INTO {target} t USING medallion_changes c ON t.event_id = c.event_id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        refs=lake_spark.medallion_refs,
    )
    assert main_rows(lake_spark, "silver.m") == [(1, "d", "view"), (2, "d", "view")]
    assert sorted(tuple(r) for r in tables.read_staged(lake_spark, staged).collect()) == [
        (1, "d", "view"),
        (2, "d", "click"),
        (3, "d", "view"),
    ]
    tables.publish(lake_spark, staged, refs=lake_spark.medallion_refs)
    assert main_rows(lake_spark, "silver.m") == [
        (1, "d", "view"),
        (2, "d", "click"),
        (3, "d", "view"),
    ]


def test_a_write_without_a_column_stores_null_there(lake_spark: Any):
    tables.publish(
        lake_spark,
        tables.stage(
            lake_spark,
            events(lake_spark, (1, "d", "a")),
            "bronze.n",
            mode="append",
            refs=lake_spark.medallion_refs,
        ),
        refs=lake_spark.medallion_refs,
    )
    narrower = lake_spark.createDataFrame([(2, "d")], "event_id bigint, event_date string")
    tables.publish(
        lake_spark,
        tables.stage(
            lake_spark, narrower, "bronze.n", mode="append", refs=lake_spark.medallion_refs
        ),
        refs=lake_spark.medallion_refs,
    )
    assert main_rows(lake_spark, "bronze.n") == [(1, "d", "a"), (2, "d", None)]


def test_a_daily_table_is_partitioned_by_its_day_before_a_day_is_written(lake_spark: Any):
    # Another writer made the table and has not added its partition field yet: a day's write
    # adds it first, else replacing the day would replace the whole table.
    refs = lake_spark.medallion_refs
    schema = "event_date string, n bigint"  # the day first: field id 1, as SeaweedFS refused
    tables.ensure_table(
        lake_spark, "silver.days", lake_spark.createDataFrame([], schema), None, refs
    )
    for day, n in (("2026-01-01", 1), ("2026-01-02", 2), ("2026-01-02", 3)):
        frame = lake_spark.createDataFrame([(day, n)], schema)
        staged = tables.stage(
            lake_spark, frame, "silver.days", mode="replace", partition=day,
            partition_column="event_date", properties=produced_by("r", day), refs=refs,
        )  # fmt: skip
        tables.publish(lake_spark, staged, refs=refs)
    assert main_rows(lake_spark, "silver.days") == [("2026-01-01", 1), ("2026-01-02", 3)]
    spec = refs.catalog.load_table("silver.days").spec()
    assert [field.name for field in spec.fields] == ["event_date"]
