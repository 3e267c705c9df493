"""Benchmark M: does a small project feel small? The project ``medallion init`` writes (one
raw source, four tables, a warehouse target), run from a cold start, against a plain PySpark
script doing the same work; and where our time goes.

Each rep is a fresh process on a fresh copy of the project, the two sides interleaved:

- ours: ``medallion run --project DIR`` on the embedded defaults, timed as a user sees it
  (wall clock of the command); its own lines give Spark's start and each step's time;
- plain: one Python process that starts a local Spark (pyspark's own jars), reads the raw JSON
  lines, runs the four SQL files in order over temp views, writes each table as Parquet and
  loads the gold target into DuckDB; what a data engineer writes by hand, without versions,
  checks, quarantine, run records or a UI.

Then, once each, the parts ours spends before Spark matters: importing the package and
Dagster, loading the catalog, building the Definitions. The issue's bar: the init project in
at most 15 s wall from a cold start on this 2-core machine.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import heading, table, verdict

REPS = 3
BAR_SECONDS = 15.0
MEDALLION = str(Path(sys.executable).parent / "medallion")

_PLAIN = r"""
import glob, re, sys, time
started = time.perf_counter()
from pyspark.sql import SparkSession
import duckdb
root, out = sys.argv[1], sys.argv[2]
spark = (SparkSession.builder.master("local[*]").appName("plain")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark_ready = time.perf_counter()
files = glob.glob(f"{root}/.medallion/s3/*/orders/**/*.jsonl", recursive=True)
raw = spark.read.json(files)
raw.createOrReplaceTempView("raw__orders")
spark.sql("SELECT *, current_timestamp() AS _ingested_at, input_file_name() AS _source_file, "
          "'b1' AS _batch_id FROM raw__orders").createOrReplaceTempView("raw__orders")
order = ["bronze/orders", "silver/orders_clean", "gold/daily_revenue", "gold/customer_orders"]
for name in order:
    sql = open(f"{root}/sql/{name}.sql").read()
    sql = re.sub(r"\b(raw|bronze|silver|gold)\.(\w+)", r"\1__\2", sql)
    frame = spark.sql(sql)
    frame.write.mode("overwrite").parquet(f"{out}/{name}")
    spark.read.parquet(f"{out}/{name}").createOrReplaceTempView(name.replace("/", "__"))
data = spark.read.parquet(f"{out}/gold/daily_revenue").toArrow()
with duckdb.connect(f"{out}/warehouse.duckdb") as db:
    db.execute("CREATE SCHEMA IF NOT EXISTS analytics")
    db.execute("CREATE OR REPLACE TABLE analytics.daily_revenue AS SELECT * FROM data")
    db.execute("SELECT count(*) FROM analytics.daily_revenue").fetchone()
print(f"SPARK {spark_ready - started:.2f}")
"""

_IMPORTS = "import medallion_assets.adapters.headless, medallion_assets.cli"
_CATALOG = (
    "import sys, time; from medallion_assets.catalog import load_catalog; t = time.perf_counter();"
    " load_catalog(sys.argv[1], use_cache=False); print(f'{time.perf_counter() - t:.2f}')"
)
_DEFINITIONS = (
    "import sys, time; from medallion_assets.adapters.code_location import build_definitions;"
    " t = time.perf_counter(); build_definitions(sys.argv[1]); "
    "print(f'{time.perf_counter() - t:.2f}')"
)


def _env(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDALLION_", "DAGSTER_"))}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    return env


def _init(where: Path) -> Path:
    project = where / "shop"
    subprocess.run([MEDALLION, "init", str(project)], check=True, capture_output=True)
    return project


def _timed(command: list[str], project: Path, spark_said: str) -> tuple[float, float, str]:
    """(wall seconds, Spark's start as the process said it, its output) of one cold process."""
    started = time.perf_counter()
    done = subprocess.run(command, env=_env(project), capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    spark = re.search(spark_said, done.stdout)
    return wall, float(spark.group(1)) if spark else float("nan"), done.stdout


def _ours(project: Path) -> dict[str, float]:
    command = [MEDALLION, "run", "--project", str(project)]
    wall, spark, said = _timed(command, project, r"Spark started in ([\d.]+) s")
    steps = [float(s) for s in re.findall(r"^\[\d+/\d+\].*?([\d.]+) s$", said, re.M)]
    return {"wall": wall, "spark": spark, "steps": sum(steps)}


def _plain(project: Path, out: Path) -> dict[str, float]:
    command = [sys.executable, "-c", _PLAIN, str(project), str(out)]
    wall, spark, _said = _timed(command, project, r"SPARK ([\d.]+)")
    return {"wall": wall, "spark": spark}


def _seconds(code: str, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    said = done.stdout.strip()
    return float(said) if said else time.perf_counter() - started


def main() -> None:
    print(heading("M: a small project from a cold start (medallion init's 4 tables)"))
    ours: list[dict[str, float]] = []
    plain: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-m-") as tmp:
        base = Path(tmp)
        for rep in range(REPS):
            ours.append(_ours(_init(base / f"ours{rep}")))
            project = _init(base / f"plain{rep}")
            plain.append(_plain(project, base / f"plain{rep}" / "out"))
            shutil.rmtree(base / f"ours{rep}", ignore_errors=True)
        project = _init(base / "parts")
        imports = _seconds(_IMPORTS)
        catalog = _seconds(_CATALOG, str(project))
        definitions = _seconds(_DEFINITIONS, str(project))

    def median(rows: list[dict[str, float]], key: str) -> float:
        return round(statistics.median(r[key] for r in rows), 1)

    wall, base_wall = median(ours, "wall"), median(plain, "wall")
    rows = [
        ["wall clock, cold start", wall, base_wall, round(wall / base_wall, 2)],
        [
            "  Spark start (beside the imports, for ours)",
            median(ours, "spark"),
            median(plain, "spark"),
            None,
        ],
        ["  the steps (4 tables)", median(ours, "steps"), None, None],
        ["  import medallion + Dagster (a process of its own)", round(imports, 1), None, None],
        ["  load the catalog (SQL parsed, lineage)", round(catalog, 2), None, None],
        ["  build the Definitions", round(definitions, 2), None, None],
    ]
    print(table(["median of 3, seconds", "ours", "plain PySpark", "ratio"], rows))
    print(
        "  the rest of ours' wall clock: the Dagster instance, run and event records, the run "
        "lock and the summary"
    )
    print(verdict("init project in <= 15 s wall", wall <= BAR_SECONDS, f"{wall} s"))
