"""Bronze ingest: extract new S3 objects of a source, read them with the declared schema, keep
malformed records in quarantine, add ingestion columns, run the bronze SQL, publish.

A manifest per source (and partition), in the control store, records every ingested object
with its ETag, the batch that brought it and when. Only objects that are new or changed are
read, by Spark's executors from the objects' own paths (``raw_read``): the driver lists and
records, and moves no raw bytes. When only new objects came and the bronze code and evolved
columns are those of the current version, their rows are appended (an Iceberg append
snapshot: the cost follows the change, not the table); otherwise (the first ingest, an object
replaced upstream with a new ETag, changed SQL) the table is rebuilt from all objects.
Re-running ingests nothing twice and a replaced file replaces its rows instead of adding to
them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pyspark.sql import functions as F

from medallion_assets.catalog.sources import Source
from medallion_assets.control.store import iso_utc
from medallion_assets.faults import crash_point
from medallion_assets.lake import Produced, Version
from medallion_assets.lineage.shape import sql_shape
from medallion_assets.lineage.spark_sql import SparkScript, spark_script, view_name
from medallion_assets.runtime.ingest.intake import (
    Batch,
    inspect_batch,
    new_objects,
    readable_entries,
    require_readable,
)
from medallion_assets.runtime.ingest.raw_inspect import inspect_objects
from medallion_assets.runtime.ingest.raw_read import REASON, files_of, read_objects
from medallion_assets.runtime.ingest.schema_drift import detect, evolved_columns
from medallion_assets.runtime.ingest.source_objects import (
    SourceUnavailable,
    manifest_digest,
    missing_at_source,
    primary_key,
    required_columns,
    source_of,
    source_prefix,
)
from medallion_assets.runtime.reuse import ingest_inputs
from medallion_assets.runtime.spark_jobs import beside
from medallion_assets.runtime.table_build import (
    BuildOutcome,
    drop_stale_staging,
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
    """What ingest needs from the (throttled) S3 resource: a listing, and where Spark reads
    each object (``ObjectStore.spark_path``)."""

    def list(self, bucket: str, prefix: str) -> list[Any]: ...

    def spark_path(self, bucket: str, key: str, size: int = 0) -> str: ...


@dataclass(frozen=True)
class IngestOutcome:
    build: BuildOutcome
    new_objects: int
    quarantined: int
    total_records: int
    metadata: dict[str, Any] = field(default_factory=dict)


def ingest(run: TableRun, store: ObjectSource) -> IngestOutcome:
    """Ingest ``run``'s source from ``store``, from the route's replica instead of the primary
    bucket when the run is rerouted. The manifest is keyed by the primary's keys either way, so
    an object already ingested from one is not ingested again from the other (replication keeps
    the ETag). Objects that cannot be read are set aside and copies of ingested ones skipped
    (``intake``); the run's log warns of each of them. The manifest is in the run's control
    store."""
    # Spark is opened only to read objects: a source with nothing new is skipped without it.
    lake, catalog, dataset, partition = run.lake, run.catalog, run.dataset, run.partition
    replica, log, warn, state = run.replica, run.log.info, run.log.warn, run.state
    name, source = source_of(catalog, dataset)
    bucket = replica.bucket if replica is not None else source.bucket
    prefix = source_prefix(source, partition, replica)
    manifest = state.manifest(name, partition)
    drop_stale_staging(run)
    listed = [o for o in store.list(bucket, prefix) if not o.key.endswith("/")]
    keyed = {primary_key(source, replica, o.key): o for o in listed}
    gone = missing_at_source(manifest, keyed)
    propagate = source.deletes == "propagate" and bool(gone)
    if gone and len(gone) == len(readable_entries(manifest)) and not propagate:
        raise SourceUnavailable(
            f"{dataset.name}: s3://{bucket}/{prefix} lists none of the {len(gone)} object(s) "
            f"ingested from it (e.g. {next(iter(sorted(gone)))}): the source is treated as "
            "unavailable (an outage, a lifecycle rule, a permission or prefix change), and "
            "nothing was changed; bronze keeps their rows"
        )
    known_objects = manifest
    if propagate:  # forgotten here, their rows go with the rebuild below
        known_objects = {k: e for k, e in manifest.items() if k not in gone}
    elif gone:
        first = sorted(gone)[0]
        since = iso_utc(float(manifest[first].get("ingested_at", 0)))
        message = (
            f"missing at source: {len(gone)} object(s) ingested before are no longer under "
            f"s3://{bucket}/{prefix} (e.g. {first}, ingested {since}); their rows stay in "
            f"{dataset.name}"
        )
        warn(message)
        if run.control is not None:
            run.control.record("missing", f"source:{name}", message, run_id=run.run_id)
    evolved = evolved_columns(state, name, warn)
    known = tuple(c.name for c in source.columns) + tuple(n for n, _ in evolved)

    def inspect(objects: Mapping[str, Any]) -> dict[str, Any]:
        paths = {k: store.spark_path(o.bucket, o.key, o.size) for k, o in objects.items()}
        sizes = {paths[k]: o.size for k, o in objects.items()}
        found = inspect_objects(run.session, source, sizes)
        return {k: found[path] for k, path in paths.items()}

    intake = inspect_batch(
        Batch(bucket, run.run_id, known, required_columns(source)),
        new_objects(keyed, known_objects),
        known_objects,
        inspect,
    )
    intake.report(bucket, warn)
    if intake.landed:
        crash_point("ingest.inspected", dataset.name, partition)
    updated = intake.manifest
    inputs = ingest_inputs(name, updated, evolved)
    current = (
        None
        if run.rebuild
        else lake.reusable(dataset.name, partition, dataset.code_version, inputs, say=warn)
    )
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
    if not propagate or readable_entries(updated):
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
    # A version another engine altered (its schema, its files) is rebuilt from every object.
    append = (
        not propagate
        and not run.rebuild  # a rebuild reads every object again
        and _appendable(
            previous, dataset.code_version, inputs, manifest, intake.landed, f"raw.{name}"
        )
        and not lake.doubt(dataset.name, partition)
    )
    if not append and gone and not propagate:
        raise SourceUnavailable(
            f"{dataset.name} must be rebuilt from its raw objects (its code, its evolved columns "
            f"or a replaced object changed), but {len(gone)} of them are no longer under "
            f"s3://{bucket}/{prefix} (e.g. {sorted(gone)[0]}): restore them, or keep the code "
            "that built the current version; nothing was published"
        )
    batch = {k: e for k, e in readable.items() if k in intake.landed} if append else readable
    spark = run.session
    batch = _with_headers(spark, source, batch, store, updated)
    files = files_of(batch, source.bucket, store.spark_path)
    records = read_objects(spark, source, files, evolved)
    total = records.total
    try:
        throttle = getattr(store, "throttle", None)
        if throttle is not None:
            throttle.rows(total)  # paces the extract to the source system's rows/s
        records.good.createOrReplaceTempView(view_name(f"raw.{name}"))
        script = spark_script(
            dataset.sql, dataset.dialect, dataset.name, {f"raw.{name}": view_name(f"raw.{name}")}
        )
        outcome, quarantined = _publish(
            run, script, records.quarantine, total, inputs, "append" if append else "replace"
        )
    finally:
        records.release()
    state.save_manifest(name, partition, manifest, updated, run.run_id)  # only after a publish
    if propagate:
        _deleted(run, name, sorted(gone), f"s3://{bucket}/{prefix}")
    new = len(intake.landed)
    log(
        f"ingested {new} new object(s) of {name}; {quarantined} malformed record(s) "
        f"quarantined out of {total}"
    )
    rate = quarantined / total if total else 0.0
    # An append adds to the version before it: the rows this run wrote are the difference.
    before = previous.rows if append and previous is not None else 0
    metadata = {
        "new_objects": new,
        "objects": len(readable),
        "bronze_write": "append" if append else "rebuild",
        "rows_written": outcome.version.rows - before,
        "quarantined_rows": quarantined,
        "quarantine_rate": round(rate, 6),
        "records_read": total,
        **intake.metadata(),
    }
    return IngestOutcome(outcome, new, quarantined, total, metadata)


def _deleted(run: TableRun, source: str, keys: list[str], where: str) -> None:
    """Warn of and audit the objects whose deletion at the source was applied to bronze
    (``deletes: propagate``): their rows are gone from the version just published."""
    message = (
        f"deletes propagated: {len(keys)} object(s) gone from {where} (e.g. {keys[0]}) were "
        f"removed with their rows from {run.dataset.name}, as sources.yaml declares "
        f"(deletes: propagate)"
    )
    run.log.warn(message)
    if run.control is not None:
        details = {"objects": keys[:100], "count": len(keys)}
        run.control.record(
            "delete", f"source:{source}", message, run_id=run.run_id, details=details
        )


def _with_headers(
    spark: Any,
    source: Source,
    batch: dict[str, Any],
    store: ObjectSource,
    manifest: dict[str, Any],
) -> dict[str, Any]:
    """``batch`` with every CSV entry's header: an entry recorded before headers were kept is
    inspected again (on the executors) and its header written into ``manifest`` too."""
    if source.format != "csv" or not source.csv_header:
        return batch
    missing = {k: e for k, e in batch.items() if "columns" not in e}
    if not missing:
        return batch
    files = files_of(missing, source.bucket, store.spark_path)
    # An entry without a size is read by Spark (only a known 0 is inspected on the driver).
    sizes = {f.path: int(e.get("size", 1)) for f, e in zip(files, missing.values(), strict=True)}
    found = inspect_objects(spark, source, sizes)
    headed = dict(batch)
    for (key, entry), file in zip(missing.items(), files, strict=True):
        columns = found[file.path][2]
        if columns is not None:
            headed[key] = manifest[key] = {**entry, "columns": columns}
    return headed


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
    first); a rejected or failed ingest publishes neither. A daily source's rows whose day
    is not their folder's go to the quarantine (``other_days``)."""
    dataset = run.dataset
    quarantine_table = f"{dataset.name}__quarantine"
    shape = sql_shape(dataset.sql, dataset.dialect, dataset.name).as_json()
    produced = Produced(dataset.code_version, inputs, run.run_id, shape=shape)
    table = script.run(run.session)
    partitions = dataset.settings.partitions
    if run.partition is not None and partitions is not None:
        table, elsewhere = other_days(table, partitions.column, run.partition)
        quarantine = quarantine.unionByName(elsewhere)
    if run.partition is not None:  # a daily source's quarantine is kept by day too
        quarantine = quarantine.withColumn(QUARANTINE_DAY, F.lit(run.partition))
    quarantine = quarantine.cache()
    quarantined = quarantine.count()  # this batch's: the checks rate what was read now
    # Staged beside the table's staging and checks (a step's other Spark work waits on them).
    q_staging = beside(
        run.session,
        lambda: stage_output(
            run, quarantine, produced, mode, table=quarantine_table, column=QUARANTINE_DAY
        ),
    )
    try:
        said = report_quarantine(run, quarantine, quarantined)
        checks = run.check_context(quarantine.drop(QUARANTINE_DAY), records_read, quarantined)
        table_produced = replace(produced, extra={"quarantined_rows": quarantined})
        staged = stage_output(run, table, table_produced, mode)

        def publish_quarantine() -> None:
            run.lake.publish(run.session, q_staging.result())

        version, validation = publish_checked(
            run, staged, table_produced, checks=checks, before_publish=publish_quarantine
        )
    except BaseException:
        with contextlib.suppress(Exception):  # not staged: nothing to drop
            run.lake.discard(run.session, q_staging.result())
        raise
    finally:  # the quarantine's staging has ended here: published, or waited for and dropped
        quarantine.unpersist()
    if said and run.control is not None:
        entity = f"dataset:{dataset.name}"
        run.control.record("quarantine", entity, said, run_id=run.run_id)
    outcome = BuildOutcome(version, False, "built", {"rows": version.rows}, validation)
    return outcome, quarantined


def other_days(table: DataFrame, column: str, day: str) -> tuple[DataFrame, DataFrame]:
    """(the rows of ``day``, the others as quarantine records): a record filed under another
    day's folder (a late or early event) would change a day this ingest does not own, and be
    loaded twice into the warehouse (each day's reload replaces only its own day). It is kept
    in the quarantine with the reason, and its own day is not touched."""

    value = F.col(f"`{column}`")
    own = value.isNotNull() & (value.cast("string") == F.lit(day))
    present = set(table.columns)

    def kept(name: str, kind: str) -> Any:
        return F.col(name) if name in present else F.lit(None).cast(kind).alias(name)

    reason = F.concat(
        F.lit(f"{column} "),
        F.coalesce(value.cast("string"), F.lit("NULL")),
        F.lit(f" is not the day of its folder ({day}): filed under the wrong day"),
    )
    elsewhere = table.where(~own).select(
        F.to_json(F.struct(*[F.col(f"`{c}`") for c in table.columns])).alias(CORRUPT),
        kept("_source_file", "string"),
        kept("_ingested_at", "timestamp"),
        kept("_batch_id", "string"),
        reason.alias(REASON),
    )
    return table.where(own), elsewhere


def report_quarantine(run: TableRun, quarantine: DataFrame, count: int) -> str | None:
    """Warn of this batch's quarantined records, counted by reason (reasons name columns and
    types, never values); the warning, audited once the batch is published."""
    if not count:
        return None

    by_reason = quarantine.groupBy(REASON).count().orderBy(F.desc("count")).collect()
    said = "; ".join(f"{row['count']} {row[REASON]}" for row in by_reason[:5])
    more = f"; and {len(by_reason) - 5} other reason(s)" if len(by_reason) > 5 else ""
    where = f"{run.dataset.name}[{run.partition}]" if run.partition else run.dataset.name
    message = (
        f"quarantined {count} record(s) of {where} in {run.dataset.name}__quarantine: {said}{more}"
    )
    run.log.warn(message)
    return message
