"""Build an ``append`` or ``merge`` table from what its driving input gained since the last
build, instead of from the whole history.

The last build's snapshot summary records the version of every input it read. When only the
driving input moved since, the build reads the driving input's new snapshots:
- ``append``: their appended rows stand in for the driving input; the output is appended.
- ``merge``: the keys of every row they appended (or, when some of them rewrote rows, of every
  row that differs between the two versions) select the driving rows the SQL runs over (every
  version of those keys, so "the latest version per key" stays right); one Iceberg ``MERGE``
  updates those keys, inserts new ones and deletes those that no longer make a row.

Anything else builds the table in full, and says why: the first build, the SQL or settings
changed, another input changed, the driving input was rewritten under an ``append`` table,
rolled back past or expired beyond the last read snapshot, or its output columns changed.
Either way the write is staged, checked as the whole table it makes, and published in one
commit, so a failed or killed build leaves the table and its recorded inputs as they were.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from medallion_assets.checks.validation import Change
from medallion_assets.errors import PermanentError
from medallion_assets.lake import Produced, StagedWrite, Version
from medallion_assets.lake.changes import Changes, appended_rows, changed_keys
from medallion_assets.lineage.incremental import Incremental
from medallion_assets.lineage.read_columns import columns_spelled
from medallion_assets.lineage.spark_sql import spark_script, view_name
from medallion_assets.runtime.samples import key_sample
from medallion_assets.runtime.scd2 import history, sql_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from medallion_assets.lineage.script import Script
    from medallion_assets.lineage.statement import Statement
    from medallion_assets.runtime.table_run import TableRun

_PRESENT = "__medallion_present"


class DuplicateKeys(PermanentError):
    """The recomputed rows hold a key more than once: the MERGE would be ambiguous."""

    error_code = "DUPLICATE_KEYS"
    fix = "make the keys in metadata/datasets.yaml unique in the SQL's output, or use kind full"


@dataclass(frozen=True)
class Increment:
    """How a build of an incremental table reads its inputs: the driving input's ``changes``
    since the last build and those of the keyed inputs that changed (``keyed``), or in full
    because of ``full_because``."""

    changes: Changes | None = None
    full_because: str = ""
    keyed: tuple[Changes, ...] = ()


def plan_increment(
    run: TableRun, plan: Incremental, sources: Mapping[str, str], current: Version | None
) -> Increment:
    """Whether ``run``'s table can be built from its driving input's changes (``sources``: the
    version of every input it reads now; ``current``: its version in force)."""
    dataset = run.dataset
    if current is None:
        return Increment(full_because="its first build")
    if run.rebuild:
        return Increment(full_because="a full refresh was asked for")
    if current.code_version != dataset.code_version:
        return Increment(full_because="its SQL or settings changed since its last build")
    moved = sorted(
        table
        for table in set(sources) | set(current.inputs)
        if table != plan.driving and current.inputs.get(table) != sources.get(table)
    )
    keyed = dict(plan.keyed)
    unkeyed = [table for table in moved if table not in keyed]
    if unkeyed:
        return Increment(full_because=f"{', '.join(unkeyed)} changed since its last build")
    found = [_changes(run, table, current, sources) for table in [plan.driving, *moved]]
    why = next((f for f in found if isinstance(f, str)), None)
    if why is not None:
        return Increment(full_because=why)
    changes, *others = [f for f in found if isinstance(f, Changes)]
    if plan.kind == "append" and changes.rewrite is not None:
        return Increment(
            full_because=f"{plan.driving} rewrote rows since its last build ({changes.rewrite}), "
            "so rows already appended may be wrong"
        )
    return Increment(changes=changes, keyed=tuple(others))


def _changes(
    run: TableRun, table: str, current: Version, sources: Mapping[str, str]
) -> Changes | str:
    """What ``table`` gained since the build of ``current``, or why it cannot be told."""
    since, until = current.inputs.get(table), sources.get(table)
    if since is None or until is None:
        return f"its last build did not record {table}"
    if run.lake.is_partitioned(table):
        return f"{table} changed since its last build (a daily table's changes are read whole)"
    changes = run.lake.changes(table, since, until)
    if changes is None:
        return (
            f"{table} no longer holds version {since} its last build read (rolled back, or its "
            "snapshots expired)"
        )
    return changes


@dataclass(frozen=True)
class StagedIncrement:
    """An incremental build staged: the write, the Spark SQL it ran, what it did (for the run
    summary) and the rows it wrote (appended, or recomputed for the MERGE)."""

    staged: StagedWrite
    query: str
    how: str
    rows: int
    change: Change | None = None  # a MERGE's recomputed rows over the version it started from


@dataclass(frozen=True)
class Base:
    """What an incremental build reads besides the changes: the table's version in force, and
    the registered view of every input (read whole)."""

    current: Version
    views: Mapping[str, str]


def stage_increment(
    run: TableRun,
    plan: Incremental,
    increment: Increment,
    base: Base,
    produced: Produced,
    parsed: tuple[Script, Statement],
) -> StagedIncrement | str:
    """Stage ``run``'s table built from the ``increment``'s changes over ``base``, or say
    why to build it in full instead."""
    changes = increment.changes
    assert changes is not None, f"{run.dataset.name}: an increment has its driving changes"
    if plan.kind == "append":
        rows = appended_rows(run.session, changes)
        return _stage_built(run, plan, rows, None, base, produced, parsed)
    # Read by the SQL's every reference to the driving input and by the MERGE: cached, and
    # filled here, before those read it at once (each reader of a cache not yet filled
    # computes it again: the demo's fraud_features computed its keys six times).
    touched = _touched_keys(run, plan, increment, base, parsed[1]).persist()
    driving_rows: DataFrame | None = None
    try:
        touched.count()
        driving = _spelled(run.session.table(base.views[plan.driving]), run, plan, parsed[1])
        condition = [driving[f"`{s}`"].eqNullSafe(touched[f"`{s}`"]) for _, s in plan.keys]
        # Read by the SQL and by the keyed inputs' filters: computed once, and filled now so
        # that a static plan (runtime/planning.py) sees their size, not the driving input's,
        # and broadcasts them to the joins with the inputs they filter.
        driving_rows = driving.join(touched, on=condition, how="left_semi").persist()
        driving_rows.count()
        moved = [c.table for c in (changes, *increment.keyed) if not c.none]
        touched_by = ", ".join(moved or [plan.driving])
        return _stage_built(run, plan, driving_rows, touched, base, produced, parsed, touched_by)
    finally:
        touched.unpersist()
        if driving_rows is not None:
            driving_rows.unpersist()


def _spelled(driving: DataFrame, run: TableRun, plan: Incremental, query: Statement) -> DataFrame:
    """The driving input's columns the SQL may read, and its keys: its rows are read once,
    whole, for the recompute, and a column the SQL never names (the demo's nested order
    lines, under silver.orders_usd) would keep Iceberg from its vectorized reader."""
    keys = {source.lower() for _, source in plan.keys}
    spelled = columns_spelled(query, run.dataset.sql, plan.driving, driving.columns)
    chosen = {c.lower() for c in spelled} | keys
    return driving.select(*[f"`{c}`" for c in driving.columns if c.lower() in chosen])


def _stage_built(
    run: TableRun,
    plan: Incremental,
    rows: DataFrame,
    touched: DataFrame | None,
    base: Base,
    produced: Produced,
    parsed: tuple[Script, Statement],
    touched_by: str = "",
) -> StagedIncrement | str:
    """The SQL run with ``rows`` standing in for the driving input, staged: appended, or
    merged over the ``touched`` keys (those the changes of ``touched_by`` named)."""
    spark, dataset = run.session, run.dataset
    increment_view = f"{view_name(plan.driving)}__increment"
    rows.createOrReplaceTempView(increment_view)
    views = {**base.views, plan.driving: increment_view}
    if touched is not None:
        views |= _keyed_views(run, plan, rows, touched, base)
    script = spark_script(dataset.sql, dataset.dialect, dataset.name, views, parsed)
    frame = script.run(spark)
    table_columns = run.lake.columns(spark, dataset.name)
    if plan.kind == "scd2":  # the history's columns come after the SQL's
        table_columns = sql_columns(table_columns)
    if [c.lower() for c in frame.columns] != [c.lower() for c in table_columns]:
        return (
            f"its output columns ({', '.join(frame.columns)}) are not the table's "
            f"({', '.join(table_columns)})"
        )
    if touched is None:
        staged = run.lake.stage(spark, frame, dataset.name, produced, mode="append")
        added = staged.rows - base.current.rows
        return StagedIncrement(
            staged, script.query, f"appended {added:,} rows from what {plan.driving} gained", added
        )
    current = run.lake.read(spark, [base.current])
    keys = list(dataset.settings.keys)
    if plan.kind == "scd2":  # the touched keys' versions: those made now beside those held
        frame = history(dataset, frame, _of_touched(current, plan, touched))
        keys.append("valid_from")
    staged, merged, gone = _stage_merge(run, plan, frame, touched, current, produced, keys)
    done, recomputed = "versions" if plan.kind == "scd2" else "recomputed rows", merged.count()
    return StagedIncrement(
        staged,
        script.query,
        f"merged {recomputed:,} {done} over the keys {touched_by}'s changes touched",
        recomputed,
        Change(merged, base.current, tuple(keys), gone),
    )


def _keyed_views(
    run: TableRun, plan: Incremental, rows: DataFrame, touched: DataFrame, base: Base
) -> dict[str, str]:
    """Each keyed input as a view holding only its rows whose joined columns hold a value the
    recomputed driving ``rows`` hold there (a touched key, for a key's column): its other rows
    meet only driving rows that are not recomputed. The demo's fraud_features then aggregates
    the changed orders' payments, not every payment, and counts the clickstream of the changed
    orders' customers, not every customer's: the rerun's cost follows the change, not the
    clickstream's history."""
    spark, of_key, views = run.session, {source for _, source in plan.keys}, {}
    for table, pairs in plan.keyed:
        if table not in base.views:
            continue
        frame = spark.table(base.views[table])
        for driven, column in pairs:
            values = touched if driven in of_key else rows.select(f"`{driven}`").distinct()
            held = values.select(values[f"`{driven}`"].alias("__medallion_key"))
            on = frame[f"`{column}`"].eqNullSafe(held["__medallion_key"])
            frame = frame.join(held, on=on, how="left_semi")
        view = f"{view_name(table)}__touched"
        frame.createOrReplaceTempView(view)
        views[table] = view
    return views


def _of_touched(rows: DataFrame, plan: Incremental, touched: DataFrame) -> DataFrame:
    """The table's ``rows`` whose keys the driving input's changes touched."""
    on = [rows[f"`{o}`"].eqNullSafe(touched[f"`{s}`"]) for o, s in plan.keys]
    return rows.join(touched, on=on, how="left_semi")


def _touched_keys(
    run: TableRun, plan: Incremental, increment: Increment, base: Base, query: Statement
) -> DataFrame:
    """The driving input's key columns of every row its changes touched, and of every driving
    row joined to a keyed input's changed rows (on the driving columns the SQL joins them
    to), once each. A row rewritten counts as changed when a column the SQL reads changed."""
    spark, columns = run.session, [source for _, source in plan.keys]
    assert increment.changes is not None, f"{run.dataset.name}: an increment has its changes"

    def read(table: str) -> list[str]:  # the columns of ``table`` the SQL reads
        held = spark.table(base.views[table]).columns
        return columns_spelled(query, run.dataset.sql, table, held)

    touched = changed_keys(spark, increment.changes, columns, read(plan.driving))
    driving = spark.table(base.views[plan.driving])
    keyed = dict(plan.keyed)
    for changes in increment.keyed:
        pairs = keyed[changes.table]  # (the driving column, the input's column)
        named = changed_keys(spark, changes, [c for _, c in pairs], read(changes.table))
        on = [driving[f"`{d}`"].eqNullSafe(named[f"`{c}`"]) for d, c in pairs]
        rows = driving.join(named, on=on, how="left_semi")
        touched = touched.unionByName(rows.select(*[f"`{c}`" for c in columns]))
    return touched.distinct() if increment.keyed else touched


def _stage_merge(
    run: TableRun,
    plan: Incremental,
    frame: DataFrame,
    touched: DataFrame,
    current: DataFrame,
    produced: Produced,
    keys: list[str],
) -> tuple[StagedWrite, DataFrame, DataFrame]:
    """One Iceberg MERGE on a staged branch, matching on the table's keys: each recomputed row
    replaces the table's row of its keys (or is inserted), and a row of a touched driving key
    that was not recomputed is deleted. (The keys may hold columns the SQL computes, e.g. a
    line number beside the order id the driving input gives: then every row of a touched order
    is replaced as a set.) ``current``: the table's rows; ``keys``: the MERGE's. With the
    rows merged in, computed once: every row of the staged table that is not one it kept; and
    the keys it deleted (both are what the warehouse load takes, ``warehouse_changes``)."""
    spark, dataset = run.session, run.dataset
    # Computed once, here: Iceberg's rewrite of the MERGE plans its source anew, so a frame
    # only cached would be computed again inside it (the whole SQL, twice).
    frame = frame.localCheckpoint()
    refuse_duplicate_keys(run, frame, keys)
    held = _of_touched(current, plan, touched).select(*[current[f"`{k}`"] for k in keys])
    gone = held.join(
        frame, on=[held[f"`{k}`"].eqNullSafe(frame[f"`{k}`"]) for k in keys], how="left_anti"
    ).localCheckpoint()
    rows = frame.selectExpr("*", f"true AS {_PRESENT}")
    source_view = f"{view_name(dataset.name)}__merge_source"
    rows.unionByName(gone, allowMissingColumns=True).createOrReplaceTempView(source_view)
    statement = merge_statement(source_view, frame.columns, keys)
    return run.lake.stage_sql(spark, dataset.name, statement, produced), frame, gone


def merge_statement(source: str, columns: list[str], keys: list[str]) -> str:
    """The MERGE of ``source`` (the recomputed rows with ``__medallion_present`` true, and the
    keys of rows to delete with it NULL) into ``{target}``.

    >>> print(merge_statement("src", ["id", "v"], ["id"]).replace(" THEN", "\\n  THEN"))
    MERGE INTO {target} AS t USING src AS s ON t.`id` <=> s.`id`
    WHEN MATCHED AND s.`__medallion_present` IS NULL
      THEN DELETE
    WHEN MATCHED
      THEN UPDATE SET t.`id` = s.`id`, t.`v` = s.`v`
    WHEN NOT MATCHED AND s.`__medallion_present` IS NOT NULL
      THEN INSERT (`id`, `v`) VALUES (s.`id`, s.`v`)
    """
    on = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)
    sets = ", ".join(f"t.`{c}` = s.`{c}`" for c in columns)
    names = ", ".join(f"`{c}`" for c in columns)
    values = ", ".join(f"s.`{c}`" for c in columns)
    return (
        f"MERGE INTO {{target}} AS t USING {source} AS s ON {on}\n"
        f"WHEN MATCHED AND s.`{_PRESENT}` IS NULL THEN DELETE\n"
        f"WHEN MATCHED THEN UPDATE SET {sets}\n"
        f"WHEN NOT MATCHED AND s.`{_PRESENT}` IS NOT NULL THEN INSERT ({names}) VALUES ({values})"
    )


def refuse_duplicate_keys(run: TableRun, frame: DataFrame, keys: list[str]) -> None:
    """``DuplicateKeys`` naming how many keys ``frame`` (a MERGE's recomputed rows, or a
    ``merge`` table's whole staged output) holds twice, and one (masked when a key column
    holds personal data)."""
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    doubled = frame.groupBy(*[f"`{k}`" for k in keys]).count().where(F.col("count") > 1)
    found = doubled.limit(1).collect()
    if not found:
        return
    dataset = run.dataset
    held = doubled.count()
    sample = key_sample(dataset, keys, found[0])
    raise DuplicateKeys(
        f"{dataset.sql_path}: {dataset.name}: {held} key(s) ({', '.join(keys)}) are held by more "
        f"than one output row (e.g. {sample}), so kind merge cannot tell which to keep; make "
        f"them unique in the SQL, or set kind full for {dataset.name} in metadata/datasets.yaml"
    )
