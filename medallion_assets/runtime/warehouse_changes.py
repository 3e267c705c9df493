"""Which rows of a published version go to a keyed warehouse target: only those of the keys that
changed since the version the warehouse holds, when that version is on the table's line
(``io/warehouse_changes.py`` applies them in one transaction); else the whole version.

The changed keys come from the lake (``lake.changes``): the keys of the rows appended since, or,
when a snapshot since rewrote rows (a MERGE, a full rebuild), of every row that differs
between the two versions. A version an incremental MERGE made from the version the warehouse
holds needs neither: its recomputed rows and the keys it deleted are the load (``Change``).
A rollback past the held version, its snapshots expired, or changes touching most of the keys
make the whole version the load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from medallion_assets.io.warehouse_changes import NotAtBase
from medallion_assets.lake.changes import changed_keys, row_digest

if TYPE_CHECKING:
    from medallion_assets.catalog.models import Target
    from medallion_assets.checks.validation import Change
    from medallion_assets.io.warehouse import LoadReport, LoadUnit, Throttle, Warehouse
    from medallion_assets.lake import Version
    from medallion_assets.runtime.table_run import TableRun

# Past this share of the version's rows changed, staging the changed keys besides their rows
# costs more than staging every row once.
MOST_KEYS = 0.5


def load_changes(
    run: TableRun,
    warehouse: Warehouse,
    target: Target,
    version: Version,
    unit: LoadUnit,
    throttle: Throttle,
    change: Change | None = None,
) -> tuple[LoadReport, int] | None:
    """Load only the keys of ``version`` changed since the version ``warehouse`` holds:
    (the load's report, the changed keys), or None when only a whole load is right (said in
    the run's log when the reason is not plain). ``change``: what the build that published
    ``version`` merged into the version before it."""
    if target.mode != "merge" or not target.keys or version.partition is not None:
        return None  # a day's load is that day's rows already; replace and append have no keys
    base = warehouse.loaded_version(target)
    if base is None or base == version.version_id:
        return None
    spark = run.session
    current = run.lake.read(spark, [version])
    merged = _merged(run, change, base, target.keys, current.columns)
    data: pa.Table | None = None
    if merged is not None:
        keys, data = merged
    else:
        changes = run.lake.changes(version.table, base, version.version_id)
        if changes is None:
            run.log.info(
                f"{target.warehouse_table} holds version {base} of {version.table}, no longer on "
                "its line (a rollback, or its snapshots expired): loading the whole version"
            )
            return None
        keys = changed_keys(spark, changes, target.keys).toArrow()
    if len(keys) > MOST_KEYS * max(version.rows, 1):
        return None
    if data is None:  # the changed keys' rows, read once they are certainly loaded
        changed = spark.createDataFrame(keys)
        rows = current.join(changed, list(target.keys), "left_semi").select(*current.columns)
        data = rows.toArrow()
    try:
        report = warehouse.load_changes(target, data, keys, unit, base, throttle)
    except NotAtBase as moved:  # another load moved it since: the whole version after all
        run.log.info(f"{moved}: loading the whole version")
        return None
    return report, len(keys)


def _merged(
    run: TableRun, change: Change | None, base: str, keys: tuple[str, ...], columns: list[str]
) -> tuple[pa.Table, pa.Table] | None:
    """(the changed keys, their rows in ``columns``) of a version an incremental MERGE made
    from ``base`` on the target's ``keys``: the keys it deleted, and those of the rows it
    recomputed that are not the rows ``base`` held (found by a digest of each, against
    ``base``'s rows of those keys alone); None when the version is not such a MERGE's."""
    if change is None or change.gone is None or change.since.version_id != base:
        return None
    if [k.lower() for k in change.keys] != [k.lower() for k in keys]:
        return None
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    spark, recomputed = run.session, change.rows
    on = [f"`{k}`" for k in change.keys]
    held = run.lake.read(spark, [change.since]).select(*[f"`{c}`" for c in recomputed.columns])
    held = held.join(recomputed.select(*on), on=list(change.keys), how="left_semi")
    old = held.select(*on, row_digest(held).alias(_DIGEST))
    new = recomputed.withColumn(_DIGEST, row_digest(recomputed))
    same = [new[k].eqNullSafe(old[k]) for k in on] + [new[_DIGEST] == old[_DIGEST]]
    fresh = new.join(old, on=same, how="left_anti").select(*[F.col(f"`{c}`") for c in columns])
    rows = fresh.toArrow()
    named = {c.lower(): c for c in rows.column_names}
    held_keys = rows.select([named[k.lower()] for k in keys]).rename_columns(list(keys))
    gone = change.gone.toDF(*keys).toArrow().cast(held_keys.schema)
    return pa.concat_tables([held_keys, gone]), rows


_DIGEST = "__medallion_digest"
