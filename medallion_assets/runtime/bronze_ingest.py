"""Bronze ingest: extract new S3 objects of a source, read them with the declared schema, keep
malformed records in quarantine, add ingestion columns, run the bronze SQL, publish.

A manifest per source (and partition), in the control store, records every ingested object
with its ETag, the batch that brought it and when. Only objects that are new or changed are
downloaded. When only new objects landed and the bronze code and evolved columns are those of
the current version, their rows are appended (an Iceberg append snapshot: the cost follows the
change, not the table); otherwise (the first ingest, an object replaced upstream with a new
ETag, changed SQL) the table is rebuilt from all landed objects. Re-running ingests nothing
twice and a replaced file replaces its rows instead of adding to them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.models import Replica, Source
from medallion_assets.lake import Produced, Version
from medallion_assets.runtime.faults import crash_point
from medallion_assets.runtime.intake import (
    Batch,
    land_batch,
    new_objects,
    readable_entries,
    require_readable,
)
from medallion_assets.runtime.raw_files import file_columns
from medallion_assets.runtime.schema_drift import detect, evolved_columns, evolved_digest
from medallion_assets.runtime.spark_sql import SparkScript, spark_script, view_name
from medallion_assets.runtime.table_build import (
    BuildOutcome,
    publish_checked,
    skipped,
    stage_output,
)
from medallion_assets.runtime.table_run import TableRun

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CORRUPT = "_corrupt_record"
QUARANTINE_DAY = "_partition"  # the day column of a daily source's quarantine table


class ObjectSource(Protocol):
    """What ingest needs from the (throttled) S3 resource."""

    def list(self, bucket: str, prefix: str) -> list[Any]: ...

    def download(self, bucket: str, key: str, destination: Path) -> Any: ...


@dataclass(frozen=True)
class IngestOutcome:
    build: BuildOutcome
    new_objects: int
    quarantined: int
    total_records: int
    metadata: dict[str, Any] = field(default_factory=dict)


def source_of(catalog: Catalog, dataset: Dataset) -> tuple[str, Source]:
    raw = catalog.raw_sources(dataset)
    if len(raw) != 1:
        found = [f"raw.{name}" for name, _ in raw]
        raise ValueError(
            f"{dataset.name}: a bronze table reads exactly one raw source, got {found}"
        )
    return raw[0]


def source_prefix(source: Source, partition: str | None, replica: Replica | None = None) -> str:
    prefix = replica.prefix if replica is not None else source.prefix
    if partition and source.partition:
        return prefix + source.partition.replace("{date}", partition) + "/"
    return prefix


def _primary_key(source: Source, replica: Replica | None, key: str) -> str:
    """The key an object read from ``replica`` has in the primary bucket."""
    return key if replica is None else source.prefix + key.removeprefix(replica.prefix)


def partition_of(source: Source, key: str) -> str | None:
    """The date a daily source's object key belongs to (``dt=2026-01-01``), or None."""
    if source.partition is None:
        return None
    pattern = re.escape(source.partition).replace(re.escape("{date}"), r"(\d{4}-\d{2}-\d{2})")
    match = re.search(pattern, key)
    return match.group(1) if match else None


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    listing = "\n".join(f"{k}\t{v['etag']}" for k, v in sorted(manifest.items()))
    return hashlib.sha256(listing.encode()).hexdigest()[:16]


def ingest(run: TableRun, store: ObjectSource) -> IngestOutcome:
    """Ingest ``run``'s source from ``store``, from the route's replica instead of the primary
    bucket when the run is rerouted. The manifest is keyed by the primary's keys either way, so
    an object already ingested from one is not ingested again from the other (replication keeps
    the ETag). Objects that cannot be read are set aside and copies of ingested ones skipped
    (``intake``); the run's log warns of each of them. The manifest is in the run's control
    store."""
    spark, lake, catalog, dataset, partition = (
        run.session,
        run.lake,
        run.catalog,
        run.dataset,
        run.partition,
    )
    replica, log, warn, state = run.replica, run.log.info, run.log.warn, run.state
    if run.landing_root is None:
        raise ValueError(f"{dataset.name}: a bronze run needs a landing folder (landing_root)")
    name, source = source_of(catalog, dataset)
    bucket = replica.bucket if replica is not None else source.bucket
    prefix = source_prefix(source, partition, replica)
    manifest = state.manifest(name, partition)
    listed = [o for o in store.list(bucket, prefix) if not o.key.endswith("/")]
    keyed = {_primary_key(source, replica, o.key): o for o in listed}
    evolved = evolved_columns(state, name, warn)
    known = tuple(c.name for c in source.columns) + tuple(n for n, _ in evolved)
    landing = run.landing_root / name / (partition or "_all")
    intake = land_batch(
        Batch(store, bucket, source, landing, run.run_id, known),
        new_objects(keyed, manifest),
        manifest,
    )
    intake.report(bucket, warn)
    if intake.landed:
        crash_point("ingest.downloaded", dataset.name, partition)
    updated = intake.manifest
    inputs = {f"raw.{name}": manifest_digest(readable_entries(updated))}
    if evolved:
        inputs[f"raw.{name}#evolved"] = evolved_digest(evolved)
    current = lake.reusable(dataset.name, partition, dataset.code_version, inputs)
    if current is not None:
        # objects set aside or skipped: remember them
        state.save_manifest(name, partition, manifest, updated, run.run_id)
        reason = (
            f"skipped {dataset.name}: no new objects to ingest under s3://{bucket}/{prefix} "
            f"and code unchanged since version {current.version_id}"
        )
        log(reason)
        outcome = skipped(run, current, reason)
        return IngestOutcome(outcome, 0, 0, current.rows, intake.metadata())
    require_readable(dataset.name, updated, f"s3://{bucket}/", prefix)
    drift = detect(
        name,
        source,
        {Path(k).name: c for k, c in intake.landed.items()},
        [n for n, _ in evolved],
    )
    if drift is not None:
        raise drift  # before reading: nothing is published, the manifest is not moved
    readable = readable_entries(updated)
    previous = lake.current(dataset.name, partition)
    append = _appendable(
        previous, dataset.code_version, inputs, manifest, intake.landed, f"raw.{name}"
    )
    batch = {k: e for k, e in readable.items() if k in intake.landed} if append else readable
    good, quarantine, total = _read_landed(spark, source, batch, evolved)
    throttle = getattr(store, "throttle", None)
    if throttle is not None:
        throttle.rows(total)  # paces the extract to the source system's rows/s
    good.createOrReplaceTempView(view_name(f"raw.{name}"))
    script = spark_script(
        dataset.sql, dataset.dialect, dataset.name, {f"raw.{name}": view_name(f"raw.{name}")}
    )
    outcome, quarantined = _publish(
        run, script, quarantine, total, inputs, "append" if append else "replace"
    )
    state.save_manifest(name, partition, manifest, updated, run.run_id)  # only after a publish
    new = len(intake.landed)
    log(
        f"ingested {new} new object(s) of {name}; {quarantined} malformed record(s) "
        f"quarantined out of {total}"
    )
    rate = quarantined / total if total else 0.0
    metadata = {
        "new_objects": new,
        "objects": len(readable),
        "bronze_write": "append" if append else "rebuild",
        "quarantined_rows": quarantined,
        "quarantine_rate": round(rate, 6),
        "records_read": total,
        **intake.metadata(),
    }
    return IngestOutcome(outcome, new, quarantined, total, metadata)


def _read_landed(
    spark: Any, source: Source, manifest: dict[str, Any], evolved: list[tuple[str, str]]
) -> tuple[Any, Any, int]:
    """(good rows with ingestion columns, malformed records, records read). Columns are the
    declared ones plus those evolve_schema added; CSV files are read by their header's names,
    so a column added in the middle of a file does not shift the others."""
    from pyspark.sql import functions as F

    paths = [entry["landing"] for entry in manifest.values()]
    columns = [(c.name, c.type) for c in source.columns] + evolved
    landed = F.regexp_replace(F.col("_metadata.file_path"), "^file:(//)?", "").alias("_landing")
    wanted = [F.col(_quoted(n)) for n, _ in columns] + [F.col(CORRUPT), landed]
    if source.format == "parquet":
        no_corrupt = F.lit(None).cast("string").alias(CORRUPT)
        frame = spark.read.schema(_ddl(columns)).parquet(*paths)
        frame = frame.select(*wanted[: len(columns)], no_corrupt, landed)
    elif source.format == "csv" and source.csv_header:
        frame = _read_csv_by_header(spark, source, paths, columns, wanted)
    else:
        reader = _permissive(spark.read.schema(f"{_ddl(columns)}, `{CORRUPT}` string"))
        if source.format == "csv":
            frame = reader.option("header", "false").csv(paths).select(*wanted)
        else:
            frame = reader.json(paths).select(*wanted)
    files = spark.createDataFrame(
        [
            (
                e["landing"],
                e.get("uri", f"s3://{source.bucket}/{key}"),
                float(e["ingested_at"]),
                e["batch_id"],
            )
            for key, e in manifest.items()
        ],
        "_landing string, _source_file string, _ingested_epoch double, _batch_id string",
    )
    frame = frame.join(F.broadcast(files), "_landing")
    frame = frame.withColumn("_ingested_at", F.col("_ingested_epoch").cast("timestamp"))
    frame = frame.drop("_landing", "_ingested_epoch").cache()  # Spark needs a cache to filter
    total = frame.count()  # on the corrupt-record column
    malformed = frame.where(F.col(CORRUPT).isNotNull())
    quarantine = malformed.select(CORRUPT, "_source_file", "_ingested_at", "_batch_id")
    good = frame.where(F.col(CORRUPT).isNull()).drop(CORRUPT)
    return good, quarantine, total


def _ddl(columns: list[tuple[str, str]]) -> str:
    return ", ".join(f"{_quoted(n)} {t}" for n, t in columns)


def _quoted(name: str) -> str:
    """``name`` as a Spark identifier, whatever it holds."""
    return "`" + name.replace("`", "``") + "`"


def _permissive(reader: Any) -> Any:
    return reader.option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)


def _read_csv_by_header(
    spark: Any, source: Source, paths: list[str], columns: list[tuple[str, str]], wanted: list[Any]
) -> Any:
    """Read each group of files sharing a header with a schema in that header's order, then
    line the groups up by column name (a column a file lacks is null)."""
    from functools import reduce

    from pyspark.sql import functions as F

    types = dict(columns)
    groups: dict[tuple[str, ...], list[str]] = {}
    for path in paths:
        header = tuple(file_columns(Path(path), source) or [n for n, _ in columns])
        groups.setdefault(header, []).append(path)
    frames = []
    for header, members in groups.items():
        ddl = _ddl([(h, types.get(h, "string")) for h in header])
        frame = _permissive(spark.read.schema(f"{ddl}, `{CORRUPT}` string"))
        frame = frame.option("header", "true").option("enforceSchema", "true").csv(members)
        present = [
            F.col(_quoted(n)) if n in header else F.lit(None).cast(kind).alias(n)
            for n, kind in columns
        ]
        frames.append(frame.select(*present, *wanted[len(columns) :]))
    return reduce(lambda a, b: a.unionByName(b), frames)


def _appendable(
    previous: Version | None,
    code_version: str,
    inputs: Mapping[str, str],
    manifest: Mapping[str, Any],
    landed: Mapping[str, Any],
    raw: str,
) -> bool:
    """Whether the new objects' rows can be appended to the current version: it was built by
    this code with these evolved columns from exactly the objects ingested before (not an
    older version a rollback made current), and every landed object is new (none replaces an
    ingested one, whose rows would have to go)."""
    if previous is None or previous.code_version != code_version:
        return False
    if previous.inputs.get(raw) != manifest_digest(readable_entries(manifest)):
        return False
    evolved = f"{raw}#evolved"
    if previous.inputs.get(evolved) != inputs.get(evolved):
        return False
    return not any(key in manifest for key in landed)


def _publish(
    run: TableRun,
    script: SparkScript,
    quarantine: DataFrame,
    records_read: int,
    inputs: dict[str, str],
    mode: Literal["replace", "append"],
) -> tuple[BuildOutcome, int]:
    """Stage the quarantine and the table, check the table, then publish both (quarantine
    first); a rejected or failed ingest publishes neither."""
    dataset = run.dataset
    quarantine_table = f"{dataset.name}__quarantine"
    produced = Produced(dataset.code_version, inputs, run.run_id)
    if run.partition is not None:  # a daily source's quarantine is kept by day too
        from pyspark.sql import functions as F

        quarantine = quarantine.withColumn(QUARANTINE_DAY, F.lit(run.partition))
    q_staged = stage_output(
        run, quarantine, produced, mode, table=quarantine_table, column=QUARANTINE_DAY
    )
    try:
        quarantined = quarantine.count()  # this batch's: the checks rate what was read now
        checks = run.check_context(quarantine.drop(QUARANTINE_DAY), records_read)
        table_produced = replace(produced, extra={"quarantined_rows": quarantined})
        staged = stage_output(run, script.run(run.session), table_produced, mode)

        def publish_quarantine() -> None:
            run.lake.publish(run.session, q_staged)

        version, validation = publish_checked(
            run, staged, table_produced, checks=checks, before_publish=publish_quarantine
        )
    except BaseException:
        run.lake.discard(run.session, q_staged)
        raise
    outcome = BuildOutcome(version, False, "built", {"rows": version.rows}, validation)
    return outcome, quarantined
