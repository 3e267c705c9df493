"""Which rows of a published version go to a keyed warehouse target: only those of the keys that
changed since the version the warehouse holds, when that version is on the table's line
(``io/warehouse_changes.py`` applies them in one transaction); else the whole version.

The changed keys come from the lake (``lake.changes``): the keys of the rows appended since, or,
when a snapshot since rewrote rows (a MERGE, a full rebuild), of every row that differs
between the two versions. A rollback past the held version, its snapshots expired, or changes
touching most of the keys make the whole version the load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from medallion_assets.io.warehouse_changes import NotAtBase
from medallion_assets.lake.changes import changed_keys

if TYPE_CHECKING:
    from medallion_assets.catalog.models import Target
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
) -> tuple[LoadReport, int] | None:
    """Load only the keys of ``version`` changed since the version ``warehouse`` holds:
    (the load's report, the changed keys), or None when only a whole load is right (said in
    the run's log when the reason is not plain)."""
    if target.mode != "merge" or not target.keys or version.partition is not None:
        return None  # a day's load is that day's rows already; replace and append have no keys
    base = warehouse.loaded_version(target)
    if base is None or base == version.version_id:
        return None
    changes = run.lake.changes(version.table, base, version.version_id)
    if changes is None:
        run.log.info(
            f"{target.warehouse_table} holds version {base} of {version.table}, no longer on its "
            "line (a rollback, or its snapshots expired): loading the whole version"
        )
        return None
    spark = run.session
    keys = changed_keys(spark, changes, target.keys).toArrow()
    if len(keys) > MOST_KEYS * max(version.rows, 1):
        return None
    current = run.lake.read(spark, [version])
    changed = spark.createDataFrame(keys)
    rows = current.join(changed, list(target.keys), "left_semi").select(*current.columns)
    try:
        report = warehouse.load_changes(target, rows.toArrow(), keys, unit, base, throttle)
    except NotAtBase as moved:  # another load moved it since: the whole version after all
        run.log.info(f"{moved}: loading the whole version")
        return None
    return report, len(keys)
