"""Dev environments in the lake on real Spark and Iceberg: a build in an environment publishes to
the table's branch env_NAME (a day to its tag), main keeps its snapshot ids and its readers'
schema proof; dropping frees the files only the environment held; a promotion is all or none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from medallion_assets.environments.diff import diff_table
from medallion_assets.lake import Lake, Produced
from medallion_assets.lake.env_writes import TypeChangeInEnv
from medallion_assets.lake.promotion import Move
from tests.lake_helpers import publish_frame

pytestmark = pytest.mark.slow


def customers(spark: Any, *rows: tuple[int, str, str], extra: bool = False) -> Any:
    schema = "customer_id bigint, email string, segment string"
    frame = spark.createDataFrame(list(rows), schema)
    return frame.selectExpr("*", "1 AS score") if extra else frame


def test_an_environment_builds_on_its_branch_and_main_sees_nothing_of_it(spark, tmp_path: Path):
    lake = Lake.local(tmp_path / "lake")
    main_v = publish_frame(lake, spark, customers(spark, (1, "a@x.io", "gold")), "silver.c")
    env = lake.in_env("dev")
    assert env.current("silver.c").version_id == main_v.version_id  # read from main
    staged = env.stage(
        spark, customers(spark, (1, "a@x.io", "GOLD"), (2, "b@x.io", "new"), extra=True),
        "silver.c", Produced("code-2"),
    )  # fmt: skip
    published = env.publish(spark, staged)
    assert lake.refs_of("silver.c")["main"] == int(main_v.version_id)
    assert lake.current("silver.c").version_id == main_v.version_id
    assert env.current("silver.c").version_id == published.version_id
    assert lake.in_env("other").current("silver.c").version_id == main_v.version_id
    # The column the environment added is medallion's: main's version stays reusable.
    assert lake.doubt("silver.c") == ""
    assert lake.reusable("silver.c", None, "test", {}) is not None
    # A second build in the environment builds on its own head.
    again = env.stage(
        spark, customers(spark, (3, "c@x.io", "x"), extra=True), "silver.c", Produced("code-3")
    )
    assert again.write.parent_id == int(published.version_id)
    env.publish(spark, again)
    # Retyping a column cannot be tried in an environment: one line, nothing staged.
    retyped = spark.createDataFrame(
        [(1, "a", "b")], "customer_id string, email string, segment string"
    )
    with pytest.raises(TypeChangeInEnv, match="customer_id"):
        env.stage(spark, retyped, "silver.c", Produced("code-4"))


def test_a_daily_table_in_an_environment_tags_its_days_apart_from_mains(spark, tmp_path: Path):
    lake = Lake.local(tmp_path / "lake")
    frame = spark.createDataFrame([(1, "2026-01-01"), (2, "2026-01-02")], "id bigint, day string")
    for day in ("2026-01-01", "2026-01-02"):
        publish_frame(
            lake,
            spark,
            frame.where(f"day = '{day}'"),
            "gold.d",
            partition=day,
            partition_column="day",
        )
    before = lake.refs_of("gold.d")
    env = lake.in_env("dev")
    rows = spark.createDataFrame([(9, "2026-01-02")], "id bigint, day string")
    staged = env.stage(
        spark, rows, "gold.d", Produced("c2"), partition="2026-01-02", partition_column="day"
    )
    env.publish(spark, staged)
    after = lake.refs_of("gold.d")
    assert {k: v for k, v in after.items() if not k.startswith("env_")} == before
    assert "env_dev__day_2026_01_02" in after
    assert env.partitions("gold.d") == ["2026-01-01", "2026-01-02"]
    assert (
        env.current("gold.d", "2026-01-01").version_id
        == lake.current("gold.d", "2026-01-01").version_id
    )
    assert [r.id for r in env.read_current(spark, "gold.d", ["2026-01-02"]).collect()] == [9]
    assert [r.id for r in lake.read_current(spark, "gold.d", ["2026-01-02"]).collect()] == [2]


def test_promotion_moves_main_all_or_none_and_drop_frees_the_environments_files(
    spark, tmp_path: Path
):
    lake = Lake.local(tmp_path / "lake")
    for name in ("silver.a", "silver.b"):
        publish_frame(lake, spark, customers(spark, (1, "a@x.io", "s")), name)
    env = lake.in_env("dev")
    heads = {}
    for name in ("silver.a", "silver.b"):
        staged = env.stage(spark, customers(spark, (5, "e@x.io", "t")), name, Produced("c2"))
        heads[name] = int(env.publish(spark, staged).version_id)
    before = {n: lake.refs_of(n)["main"] for n in heads}
    ops = lake.environments()
    assert sorted(t.table for t in ops.environments()["dev"]) == ["silver.a", "silver.b"]

    # A promotion that fails on its second table rolls the first back.
    moves = [Move("silver.a", heads["silver.a"]), Move("silver.b", 12345)]
    with pytest.raises(ValueError, match="unknown snapshot"):
        ops.promote("dev", moves, lambda _m: None)
    assert {n: lake.refs_of(n)["main"] for n in heads} == before
    assert lake.refs_of("silver.a")["env_dev"] == heads["silver.a"]  # its branch restored too
    under_way = lake._metadata.load_namespace_properties("silver")
    assert not [k for k in under_way if k.startswith("medallion.promotion.")]

    audited: list[str] = []
    ops.promote("dev", [Move(n, h) for n, h in heads.items()], audited.append)
    assert {n: lake.refs_of(n)["main"] for n in heads} == heads
    assert "env_dev" not in lake.refs_of("silver.a")  # merged: its branch goes
    assert audited == ["promoted environment dev to main: silver.a, silver.b"]

    # A new environment's build, dropped: its branch goes, and the files only it wrote.
    other = lake.in_env("gone")
    frame = customers(spark, (7, "g@x.io", "u"), extra=True)
    staged = other.stage(spark, frame, "silver.a", Produced("c3"))
    other.publish(spark, staged)
    files = {p for p in (tmp_path / "lake").rglob("*.parquet")}
    freed = ops.drop("gone", ["silver.a"])
    assert freed > 0 and "env_gone" not in lake.refs_of("silver.a")
    assert "score" not in [c for c, _type in lake.schema("silver.a")]  # its column went too
    assert len(files - {p for p in (tmp_path / "lake").rglob("*.parquet")}) >= 1
    assert lake.current("silver.a").version_id == str(heads["silver.a"])


def test_diff_counts_by_keys_and_masks_personal_data(spark, tmp_path: Path, demo_catalog):
    lake = Lake.local(tmp_path / "lake")
    table = "silver.customers_clean"
    dataset = demo_catalog.datasets[table]
    assert "email" in dataset.settings.pii_columns or "email" in {
        c for c in demo_catalog.lineage.pii_in(table)
    }
    schema = "customer_id bigint, email string, country_code string"
    main_rows = [(1, "a@x.io", "DE"), (2, "b@x.io", "FR"), (3, "c@x.io", "US")]
    env_rows = [(1, "a@x.io", "DE"), (2, "b2@x.io", "FR"), (4, "d@x.io", "NL")]
    publish_frame(lake, spark, spark.createDataFrame(main_rows, schema), table)
    env = lake.in_env("dev")
    env.publish(
        spark, env.stage(spark, spark.createDataFrame(env_rows, schema), table, Produced("c"))
    )
    found = diff_table(spark, lake, demo_catalog, "dev", table)
    assert found.matched_by == "row digest" or found.matched_by.startswith("keys")
    assert (found.main_rows, found.env_rows) == (3, 3)
    text = repr(found.sample)
    assert "b2@x.io" not in text and "d@x.io" not in text  # masked as check samples are
