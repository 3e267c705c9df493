"""A build whose files are small is planned once, statically (``runtime/planning.py``): its
step's session runs without adaptive execution and with a shuffle partition per 32 MB; a large
one, or one whose size is not known, keeps adaptive execution. The result is the same rows."""

from __future__ import annotations

from pathlib import Path

from medallion_assets.lake import Version
from medallion_assets.runtime import planning
from medallion_assets.runtime.planning import files_bytes
from medallion_assets.runtime.table_build import build_table
from medallion_assets.runtime.table_run import TableRun
from tests.runtime.small_project import small_project
from tests.runtime.test_merge_checks import FILES, TABLE, land

ADAPTIVE = "spark.sql.adaptive.enabled"


def test_a_small_increment_is_planned_statically_a_large_one_adaptively(
    spark, tmp_path: Path, monkeypatch
):
    catalog, lake = small_project(tmp_path, "planning", FILES)
    land(spark, lake, [(i, 100 * i, "DE") for i in range(1, 41)], 0)

    def build(session, rebuild: bool = False):
        dataset = catalog.datasets[TABLE]
        run = TableRun(catalog=catalog, dataset=dataset, lake=lake, spark=session, rebuild=rebuild)
        return build_table(run), session.conf

    first, conf = build(spark.newSession())  # in full, from a few KB of files
    assert first.metadata["built"].startswith("in full")
    assert (conf.get(ADAPTIVE), conf.get("spark.sql.shuffle.partitions")) == ("false", "2")

    land(spark, lake, [(3, 333, "FR"), (41, 4100, "FR")], 1)
    small, conf = build(spark.newSession())
    assert small.metadata["built"].startswith("merged 2 recomputed rows")
    assert (conf.get(ADAPTIVE), conf.get("spark.sql.shuffle.partitions")) == ("false", "2")

    monkeypatch.setattr(planning, "STATIC_PLAN_BYTES", 0)  # every table is large now
    monkeypatch.setattr(planning, "STATIC_FULL_BYTES", 0)
    land(spark, lake, [(5, 555, "FR"), (42, 4200, "DE")], 2)
    large, conf = build(spark.newSession())
    assert large.metadata["built"].startswith("merged 2 recomputed rows")
    assert conf.get(ADAPTIVE) == "true"
    again, conf = build(spark.newSession(), rebuild=True)  # in full, from the same files
    assert again.metadata["built"].startswith("in full") and conf.get(ADAPTIVE) == "true"

    held = {tuple(r) for r in lake.read_current(spark, TABLE).collect()}
    rebuilt = spark.sql(
        "SELECT order_id, updated_at, amount, country FROM (SELECT *, row_number() OVER "
        "(PARTITION BY order_id ORDER BY updated_at DESC) AS rn FROM lake.bronze.orders) "
        "WHERE rn = 1"
    )
    assert held == {tuple(r) for r in rebuilt.collect()} and len(held) == 42


class _Sized:
    def __init__(self, sizes: dict[str, list[int]]):
        self.sizes = sizes

    def current_versions(self, table: str) -> list[Version]:
        return [
            Version(table, None, "1", "c", {}, 1, 0.0, files_bytes=size)
            for size in self.sizes[table]
        ]


def test_a_table_whose_size_is_not_known_is_not_guessed_small():
    """A daily table counts its largest day's snapshot; a table without a version, or one
    another engine wrote (no size in its summary), makes the build's size unknown."""
    lake = _Sized({"a": [10, 30], "b": [5], "gone": [], "other": [0]})
    assert files_bytes(lake, ["a", "b"]) == 35  # type: ignore[arg-type]
    assert files_bytes(lake, ["a", "gone"]) is None  # type: ignore[arg-type]
    assert files_bytes(lake, ["b", "other"]) is None  # type: ignore[arg-type]
