"""Benchmark D's baseline: TheWorldShop's pipeline as a plain PySpark script, without Dagster.

    python -m bench.plain_pyspark PROJECT --s3 DIR --out DIR

What a data engineer would write by hand to do the same work as the Dagster run, on the same
Spark session settings. Only metadata and SQL text come from the project: ``load_catalog`` gives
the tables in dependency order with their SQL, sources and targets, and
``runtime.sql.spark_query`` rewrites table references to temp views (pure SQL text). Session
creation (``runtime.spark.spark_session`` with ``MedallionSettings.from_env``, the call the Dagster
side's resource makes) happens before the clock starts, as on the Dagster side. Then, timed:

- daily-partitioned tables day by day (days found under the daily source's ``dt=`` folders),
  then every other table, in the catalog's order: the same runs the Dagster side makes;
- bronze: read the raw files with the declared schema, PERMISSIVE with a corrupt-record column,
  add ``_ingested_at``, ``_source_file``, ``_batch_id``, cache and count, write the malformed
  records to a quarantine parquet folder and count it, run the bronze SQL on the good rows;
- silver and gold: register each upstream's output (the same day for daily-on-daily, all days
  otherwise) as a temp view and run the SQL;
- every table: write parquet, read it back for the row count;
- gold tables with a target: to Arrow, then into DuckDB as the loader does it (create if missing,
  stage into a temp table in 50,000-row batches, replace / append / merge in one transaction,
  count the table).

What it leaves out, because a hand-written script has none of it: object manifests and landing
copies, versioned folders and atomic publish, skip-if-unchanged, throttles, run and event
records. Prints one JSON line: total seconds and, per table and partition, seconds and rows,
each with the part spent inside Py4J calls (``bench.jvm_clock``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

CORRUPT = "_corrupt_record"
BATCH_ROWS = 50_000


@dataclass
class TableRun:
    table: str
    partition: str | None
    seconds: float
    rows: int
    quarantined: int | None = None
    warehouse_rows: int | None = None
    jvm: float = 0.0  # of ``seconds``, inside Py4J calls


class PlainPipeline:
    """Runs one table (or one day of one) at a time; outputs go under ``out``."""

    def __init__(
        self,
        spark: Any,
        catalog: Any,
        s3_root: Path,
        out: Path,
        jvm_clock: Callable[[], float] = lambda: 0.0,
    ):
        from medallion_assets.lineage.spark_sql import spark_query

        self.spark, self.catalog, self.s3_root, self.out = spark, catalog, s3_root, out
        self.jvm_clock = jvm_clock
        self.spark_query = spark_query
        self.batch_id = uuid.uuid4().hex
        self.written: dict[str, list[str]] = {}  # table -> output folders (one per day)
        self.runs: list[TableRun] = []

    def run(self) -> list[TableRun]:
        datasets = self.catalog.datasets
        daily = [n for n, d in datasets.items() if d.settings.partitions is not None]
        for day in self.days(daily):
            for name in daily:
                self.build(name, day)
        for name in datasets:
            if name not in daily:
                self.build(name, None)
        return self.runs

    def days(self, daily: list[str]) -> list[str]:
        found: set[str] = set()
        for name in daily:
            dataset = self.catalog.datasets[name]
            if dataset.layer != "bronze":
                continue
            source = self.source(dataset)
            if source.partition is None:
                continue
            pattern = re.escape(source.partition).replace(
                re.escape("{date}"), r"(\d{4}-\d{2}-\d{2})"
            )
            folder = self.s3_root / source.bucket / source.prefix
            for path in folder.rglob("*"):
                match = re.search(pattern, str(path.relative_to(folder)))
                if match:
                    found.add(match.group(1))
        return sorted(found)

    def source(self, dataset: Any) -> Any:
        (raw,) = [u for u in dataset.upstream if u.startswith("raw.")]
        return self.catalog.sources[raw.removeprefix("raw.")]

    def build(self, name: str, day: str | None) -> None:
        started, jvm_started = time.perf_counter(), self.jvm_clock()
        dataset = self.catalog.datasets[name]
        layer, table = name.split(".")
        path = self.out / "lake" / layer / table / (f"dt={day}" if day else "")
        run = TableRun(name, day, 0.0, 0)
        if dataset.layer == "bronze":
            views = self.read_raw(dataset, day, path, run)
        else:
            views = self.register_upstream(dataset, day)
        _, query = self.spark_query(dataset.sql, dataset.dialect, name, views)
        self.spark.sql(query).write.mode("overwrite").parquet(str(path))
        run.rows = self.spark.read.parquet(str(path)).count()
        self.written.setdefault(name, []).append(str(path))
        if dataset.target is not None:
            run.warehouse_rows = self.load_warehouse(dataset.target, str(path), run.rows)
        run.seconds = time.perf_counter() - started
        run.jvm = self.jvm_clock() - jvm_started
        self.runs.append(run)

    def read_raw(self, dataset: Any, day: str | None, out: Path, run: TableRun) -> dict[str, str]:
        from pyspark.sql import functions as F

        source = self.source(dataset)
        prefix = source.prefix
        if day and source.partition:
            prefix += source.partition.replace("{date}", day) + "/"
        folder = self.s3_root / source.bucket / prefix
        paths = sorted(str(p) for p in folder.rglob("*") if p.is_file())
        ddl = ", ".join(f"`{c.name}` {c.type}" for c in source.columns)
        if source.format == "parquet":
            frame = self.spark.read.schema(ddl).parquet(*paths)
            frame = frame.withColumn(CORRUPT, F.lit(None).cast("string"))
        else:
            reader = self.spark.read.schema(f"{ddl}, `{CORRUPT}` string")
            reader = reader.option("mode", "PERMISSIVE")
            reader = reader.option("columnNameOfCorruptRecord", CORRUPT)
            if source.format == "csv":
                frame = reader.option("header", str(source.csv_header).lower()).csv(paths)
            else:
                frame = reader.json(paths)
        local = "^file:(//)?" + re.escape(str(self.s3_root.resolve())) + "/"
        frame = (
            frame.withColumn("_ingested_at", F.lit(time.time()).cast("timestamp"))
            .withColumn(
                "_source_file", F.regexp_replace(F.col("_metadata.file_path"), local, "s3://")
            )
            .withColumn("_batch_id", F.lit(self.batch_id))
            .cache()  # Spark filters on the corrupt-record column only over a cached frame
        )
        frame.count()
        quarantine_path = str(out).rstrip("/") + "__quarantine"
        malformed = frame.where(F.col(CORRUPT).isNotNull())
        malformed.select(CORRUPT, "_source_file", "_ingested_at", "_batch_id").write.mode(
            "overwrite"
        ).parquet(quarantine_path)
        run.quarantined = self.spark.read.parquet(quarantine_path).count()
        raw = next(u for u in dataset.upstream if u.startswith("raw."))
        view = raw.replace(".", "__")
        frame.where(F.col(CORRUPT).isNull()).drop(CORRUPT).createOrReplaceTempView(view)
        return {raw: view}

    def register_upstream(self, dataset: Any, day: str | None) -> dict[str, str]:
        views = {}
        for upstream in dataset.upstream:
            both_daily = (
                day is not None and self.catalog.datasets[upstream].settings.partitions is not None
            )
            paths = [p for p in self.written[upstream] if not both_daily or p.endswith(day)]
            view = upstream.replace(".", "__")
            self.spark.read.parquet(*paths).createOrReplaceTempView(view)
            views[upstream] = view
        return views

    def load_warehouse(self, target: Any, path: str, lake_rows: int) -> int:
        import duckdb

        data = self.spark.read.parquet(path).toArrow()
        con = duckdb.connect(str(self.out / "warehouse.duckdb"))
        try:
            schema, _ = target.warehouse_table.split(".")
            table = target.warehouse_table
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
            con.register("incoming", data)
            con.execute(f"CREATE TABLE IF NOT EXISTS {table} AS SELECT * FROM incoming WHERE 1 = 0")
            con.unregister("incoming")
            con.execute(f"CREATE TEMP TABLE stage AS SELECT * FROM {table} WHERE 1 = 0")
            for offset in range(0, len(data), BATCH_ROWS):
                con.register("batch", data.slice(offset, BATCH_ROWS))
                con.execute("INSERT INTO stage SELECT * FROM batch")
                con.unregister("batch")
            con.execute("BEGIN")
            if target.mode == "replace":
                con.execute(f"DELETE FROM {table}")
            elif target.mode == "merge":
                match = " AND ".join(f"{table}.{k} = stage.{k}" for k in target.keys)
                con.execute(f"DELETE FROM {table} USING stage WHERE {match}")
            con.execute(f"INSERT INTO {table} SELECT * FROM stage")
            con.execute("COMMIT")
            con.execute("DROP TABLE stage")
            (count,) = con.execute(f"SELECT count(*) FROM {table}").fetchone()
        finally:
            con.close()
        return int(count)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plain_pyspark")
    parser.add_argument("project", type=Path)
    parser.add_argument("--s3", type=Path, required=True, help="the folder standing in for S3")
    parser.add_argument("--out", type=Path, required=True, help="where tables and DuckDB go")
    args = parser.parse_args(argv)

    import_started = time.perf_counter()
    import duckdb  # noqa: F401  imported before the clock, like dagster on the other side
    import pyspark.sql  # noqa: F401

    from bench.jvm_clock import install as install_jvm_clock
    from medallion_assets.catalog import load_catalog
    from medallion_assets.runtime.spark_session import spark_session
    from medallion_assets.settings import MedallionSettings

    imports = time.perf_counter() - import_started
    started = time.perf_counter()
    spark = spark_session(MedallionSettings.from_env(os.environ))
    session_seconds = time.perf_counter() - started

    clock = install_jvm_clock()
    started = time.perf_counter()
    catalog = load_catalog(args.project)
    runs = PlainPipeline(spark, catalog, args.s3, args.out, clock).run()
    seconds = time.perf_counter() - started
    out = {
        "side": "plain",
        "seconds": seconds,
        "jvm_seconds": clock(),
        "import_seconds": imports,
        "session_seconds": session_seconds,
        "tables": [asdict(r) for r in runs],
    }
    sys.stdout.write(json.dumps(out) + "\n")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
