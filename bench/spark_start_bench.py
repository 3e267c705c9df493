"""Benchmark K: what the lake's JVM packages cost a Spark driver's start.

Each rep is a fresh Python process (as every `medallion run` is) that starts a local session
and runs a first query, timed from before ``getOrCreate``. Baseline: pyspark's own jars, a
``SELECT 1``. Measured: the session ``spark_session`` builds (the 42 jars `medallion jars`
fetched, the lake catalog), then a first commit and read of an Iceberg table in the
embedded lake (JDBC catalog on SQLite, warehouse in a folder). Reps alternate the two sides,
so machine noise falls on both. Informational: no bar.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.report import heading, table

REPS = 3

_CHILD = r"""
import json, os, sys, time
started = time.perf_counter()
from pyspark.sql import SparkSession
side, home = sys.argv[1], sys.argv[2]
if side == "plain":
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .getOrCreate())
    up = time.perf_counter()
    spark.sql("SELECT 1").collect()
else:
    from pathlib import Path
    from medallion_assets.lake.catalog import LakeCatalog
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings
    settings = MedallionSettings.from_env({"MEDALLION_SPARK_MASTER": "local[2]"}, Path(home))
    spark = spark_session(settings)
    up = time.perf_counter()
    lake = LakeCatalog.parse(f"sqlite:///{home}/lake_catalog.db", f"{home}/lake")
    for key, value in lake.spark_conf().items():
        spark.conf.set(key, value)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
    spark.range(10).writeTo("lake.bench.t").createOrReplace()
    spark.table("lake.bench.t").count()
done = time.perf_counter()
print(json.dumps({"start": up - started, "first": done - up}))
spark.stop()
"""


def _rep(side: str) -> dict[str, float]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, side, home],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    print(heading("K. Spark driver start with the lake's JVM packages (fresh process per rep)"))
    runs: dict[str, list[dict[str, float]]] = {"plain": [], "lake": []}
    for _ in range(REPS):
        for side in runs:
            runs[side].append(_rep(side))
    rows = []
    for side, label in (("plain", "pyspark alone, SELECT 1"), ("lake", "with Iceberg + s3a jars")):
        start = statistics.median(r["start"] for r in runs[side])
        first = statistics.median(r["first"] for r in runs[side])
        rows.append([label, start, first, start + first])
    base = rows[0][3]
    for row in rows:
        row.append(row[3] / base)
    print(table(["side", "start s", "first query s", "total s", "ratio"], rows))
    print(
        f"  medians of {REPS} interleaved reps; the lake side's first query creates, writes "
        "and reads an Iceberg table"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
