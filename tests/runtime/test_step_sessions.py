"""Each step gets a Spark session of its own over the run's one Spark: steps on parallel threads
never see each other's temp views or SQL settings, and their jobs go to the FAIR pool of their
table's criticality, weighted as the profile ranks it."""

from __future__ import annotations

import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from medallion_assets.runtime.spark_session import fair_pools, step_session
from medallion_assets.settings import MedallionSettings


def test_the_pools_file_gives_each_criticality_its_weight(tmp_path: Path):
    path = fair_pools(tmp_path, {"critical": 10, "normal": 1, "low": 0})
    pools = {p.get("name"): p for p in ET.parse(path).getroot()}
    assert {name: int(p.findtext("weight")) for name, p in pools.items()} == {
        "critical": 10,
        "normal": 1,
        "low": 1,  # never 0: a pool of weight 0 would starve while any other pool has work
    }
    assert {p.findtext("schedulingMode") for p in pools.values()} == {"FIFO"}


@pytest.mark.slow
def test_steps_on_threads_keep_their_views_settings_and_pools_apart(spark, tmp_path: Path):
    settings = MedallionSettings.from_env({"MEDALLION_SPARK_SHUFFLE_PARTITIONS": "3"}, tmp_path)
    assert spark.sparkContext.getConf().get("spark.scheduler.mode") == "FAIR"
    seen: dict[str, tuple[list[int], str | None, str]] = {}
    barrier = threading.Barrier(2)

    def step(name: str, pool: str, value: int) -> None:
        session = step_session(spark, settings, pool)
        session.sql(f"SELECT {value} AS v").createOrReplaceTempView("input_rows")
        session.sql(f"SET spark.sql.ansi.enabled = {'true' if value == 1 else 'false'}")
        barrier.wait()  # both views exist, under the same name, before either reads
        rows = [r.v for r in session.sql("SELECT v FROM input_rows").collect()]
        pool_now = session.sparkContext.getLocalProperty("spark.scheduler.pool")
        seen[name] = (rows, pool_now, session.conf.get("spark.sql.ansi.enabled"))

    threads = [
        threading.Thread(target=step, args=("a", "critical", 1)),
        threading.Thread(target=step, args=("b", "low", 2)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"a": ([1], "critical", "true"), "b": ([2], "low", "false")}
    assert "input_rows" not in [t.name for t in spark.catalog.listTables()]
    assert spark.sparkContext.getLocalProperty("spark.scheduler.pool") is None  # main thread
    assert step_session(spark, settings, "x").conf.get("spark.sql.shuffle.partitions") == "3"
