"""Benchmark L: the Iceberg lake's writes cost what the change costs, not what the table holds.

L1, ingest: one new raw object of 1,000 records ingested into bronze.orders (the real
``ingest`` path: listing, manifest, read, checks, staged append, publish) when the table
already holds 1,000,000 rows, against the same when it holds 1,000. Bar: <= 2x.

L2, MERGE: 1% of the keys of a 1,000,000-row, ten-column table changed, applied with
``MERGE INTO`` as Iceberg's own (merge-on-read: delete files for the rows changed) on a staged
branch and published, against rebuilding the same table from the same inputs (a whole-table
rewrite, what the lake did for a MERGE before). Bar: <= 0.3x.

One Spark session (local, 2 cores) for everything; reps of the two sides interleaved so the
machine's noise falls on both; medians. Informational: prints PASS/FAIL against the bars,
fails nothing. ``python -m bench L`` (~6 min on the 2-core machine).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.report import heading, table

REPS = 3
BIG, SMALL, NEW = 1_000_000, 1_000, 1_000
CHANGED = BIG // 100
MINIMAL = Path(__file__).resolve().parents[1] / "tests" / "catalog" / "minimal_project"


def _records(start: int, count: int) -> bytes:
    countries = ("DE", "FR", "GB")
    lines = (
        json.dumps({"order_id": i, "amount": i % 997, "country": countries[i % 3]})
        for i in range(start, start + count)
    )
    return ("\n".join(lines) + "\n").encode()


class _Bronze:
    """A copy of the minimal project whose bronze.orders holds ``rows`` rows."""

    def __init__(self, spark: Any, folder: Path, rows: int):
        from medallion_assets.catalog import load_catalog
        from medallion_assets.control.store import ControlStore
        from medallion_assets.io.object_store import LocalFolderObjectStore
        from medallion_assets.lake import Lake

        self.spark, self.folder = spark, folder
        self.root = folder / "project"
        shutil.copytree(MINIMAL, self.root)
        self.catalog = load_catalog(self.root, use_cache=False)
        self.store = LocalFolderObjectStore(folder / "s3")
        self.store.ensure_bucket("minimal-raw")
        self.lake = Lake.local(folder / "lake")
        self.control = ControlStore.open(f"sqlite:///{folder / 'control.db'}")
        self.next_id = rows
        self.store.put("minimal-raw", "orders/base.jsonl", _records(0, rows))
        self.ingest("base")

    def ingest(self, run_id: str) -> Any:
        from medallion_assets.runtime.ingest.bronze_ingest import ingest
        from medallion_assets.runtime.table_run import TableRun

        run = TableRun(
            spark=self.spark,
            lake=self.lake,
            catalog=self.catalog,
            dataset=self.catalog.datasets["bronze.orders"],
            run_id=run_id,
            control=self.control,
        )
        return ingest(run, self.store)

    def add_object(self, rep: int) -> float:
        """Seconds to ingest one new object of ``NEW`` records."""
        self.store.put("minimal-raw", f"orders/new-{rep}.jsonl", _records(self.next_id, NEW))
        self.next_id += NEW
        started = time.perf_counter()
        outcome = self.ingest(f"rep-{rep}")
        seconds = time.perf_counter() - started
        if outcome.metadata.get("bronze_write") != "append":
            raise RuntimeError(f"expected an append, got {outcome.metadata.get('bronze_write')}")
        return seconds


def _ingest_cost(spark: Any, work: Path) -> tuple[float, float]:
    small = _Bronze(spark, work / "small", SMALL)
    big = _Bronze(spark, work / "big", BIG)
    times: dict[str, list[float]] = {"small": [], "big": []}
    for rep in range(REPS):
        times["small"].append(small.add_object(rep))
        times["big"].append(big.add_object(rep))
    return statistics.median(times["small"]), statistics.median(times["big"])


def _merge_cost(spark: Any, work: Path) -> tuple[float, float]:
    from pyspark.sql import functions as F

    from medallion_assets.lake import Lake, Produced
    from medallion_assets.lake.tables import identifier

    lake = Lake.local(work / "merge-lake")
    table = "silver.accounts"

    def base() -> Any:
        """An accounts table of ``BIG`` rows as a silver table is wide: ten columns."""
        return spark.range(BIG).select(
            F.col("id").alias("account_id"),
            (F.col("id") % 1000).cast("decimal(18,2)").alias("balance"),
            F.concat(F.lit("name-"), F.col("id")).alias("name"),
            F.concat(F.lit("user"), F.col("id"), F.lit("@example.com")).alias("email"),
            F.element_at(
                F.array(*map(F.lit, ("DE", "FR", "GB", "US"))), (F.col("id") % 4 + 1).cast("int")
            ).alias("country"),
            (F.lit(1_767_225_600) + F.col("id") * 7).cast("timestamp").alias("opened_at"),
            F.when(F.col("id") % 10 == 0, "closed").otherwise("open").alias("status"),
            (F.col("id") % 17).cast("int").alias("segment"),
            (F.col("id") % 5000 * 10).cast("decimal(18,2)").alias("credit_limit"),
            F.sha2(F.col("id").cast("string"), 256).alias("fingerprint"),
        )

    changes = spark.range(0, BIG, 100).select(
        F.col("id").alias("account_id"), F.lit(1).cast("decimal(18,2)").alias("delta")
    )
    changes.cache().count()
    changes.createOrReplaceTempView("bench_changes")
    merge = (
        "MERGE INTO {target} t USING bench_changes c ON t.account_id = c.account_id "
        "WHEN MATCHED THEN UPDATE SET balance = t.balance + c.delta"
    )
    times: dict[str, list[float]] = {"merge": [], "rebuild": []}
    lake.publish(spark, lake.stage(spark, base(), table, Produced("base")))
    for rep in range(REPS):
        started = time.perf_counter()
        staged = lake.stage_sql(spark, table, merge, Produced(f"merge-{rep}"))
        lake.publish(spark, staged)
        times["merge"].append(time.perf_counter() - started)

        current = spark.table(identifier(table))
        balance = (F.col("balance") + F.coalesce(F.col("delta"), F.lit(0))).cast("decimal(18,2)")
        rebuilt = current.join(changes, "account_id", "left").select(
            *[balance.alias(c) if c == "balance" else F.col(c) for c in current.columns]
        )
        started = time.perf_counter()
        lake.publish(spark, lake.stage(spark, rebuilt, table, Produced(f"rebuild-{rep}")))
        times["rebuild"].append(time.perf_counter() - started)
    return statistics.median(times["merge"]), statistics.median(times["rebuild"])


def main() -> None:
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings

    print(heading("L. Lake writes follow the change (Iceberg, local 2-core Spark)"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        settings = MedallionSettings.from_env({"MEDALLION_HOME": str(work / "home")}, work)
        spark = spark_session(settings)
        small, big = _ingest_cost(spark, work)
        merged, rebuilt = _merge_cost(spark, work)
    ingest_ratio, merge_ratio = big / small, merged / rebuilt
    rows = [
        [
            f"ingest {NEW:,} new records: into {BIG:,} rows vs into {SMALL:,}",
            small,
            big,
            ingest_ratio,
            "<= 2.0",
            "PASS" if ingest_ratio <= 2.0 else "FAIL",
        ],
        [
            f"MERGE {CHANGED:,} changed keys into {BIG:,} rows vs rebuilding the table",
            rebuilt,
            merged,
            merge_ratio,
            "<= 0.3",
            "PASS" if merge_ratio <= 0.3 else "FAIL",
        ],
    ]
    print(table(["case", "baseline s", "measured s", "ratio", "bar", ""], rows))
    print(f"  medians of {REPS} interleaved reps")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
