"""How an environment's version of a table differs from ``main``'s, computed by Spark where the
data is: rows added, removed and changed by the table's keys (its merge keys, else its
warehouse target's; without keys, rows are matched by a digest of every column, so a changed
row is one removed and one added), each column's nulls, distinct values, min, max and sum on
both sides, and a sample of changed rows with personal data masked as check samples mask it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from medallion_assets.catalog import Catalog
from medallion_assets.checks.results import MASKED, CheckContext, sample_rows
from medallion_assets.lake import Lake
from medallion_assets.lake.changes import row_digest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SIDE, ROW = "__medallion_side", "__medallion_row"
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")


@dataclass(frozen=True)
class ColumnDiff:
    column: str
    main: dict[str, Any]  # nulls, distinct, min, max, sum (numbers)
    env: dict[str, Any]

    @property
    def differs(self) -> bool:
        return self.main != self.env


@dataclass(frozen=True)
class TableDiff:
    table: str
    matched_by: str  # "keys a, b" or "row digest"
    main_rows: int
    env_rows: int
    added: int
    removed: int
    changed: int
    columns_added: tuple[str, ...] = ()
    columns_removed: tuple[str, ...] = ()
    columns: tuple[ColumnDiff, ...] = ()
    sample: tuple[dict[str, Any], ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "matched_by": self.matched_by,
            "main_rows": self.main_rows,
            "env_rows": self.env_rows,
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "columns_added": list(self.columns_added),
            "columns_removed": list(self.columns_removed),
            "columns": [
                {"column": c.column, "main": c.main, "env": c.env}
                for c in self.columns
                if c.differs
            ],
            "sample": list(self.sample),
        }


def diff_table(
    spark: SparkSession, lake: Lake, catalog: Catalog, env: str, table: str, sample: int = 5
) -> TableDiff:
    """``table`` in environment ``env`` against ``main``."""
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    dataset = catalog.datasets[table]
    ours = lake.in_env(env).read_current(spark, table)
    theirs = lake.in_env(None).read_current(spark, table)
    assert ours is not None, f"{table}: not built in environment {env}"
    if theirs is None:
        theirs = spark.createDataFrame([], ours.schema)
    drops = {c for v in lake.in_env(env).current_versions(table) for c in v.drops}
    ours = ours.drop(*[c for c in ours.columns if c in drops])
    common = [c for c in ours.columns if c in set(theirs.columns)]
    keys = list(dataset.settings.keys or (dataset.target.keys if dataset.target else ()))
    keys = [k for k in keys if k in common]
    pii = CheckContext(lambda: spark, lake, catalog, dataset).pii_columns
    left = theirs.select(*[F.col(f"`{c}`") for c in common])
    right = ours.select(*[F.col(f"`{c}`") for c in common])
    left, right = left.withColumn(ROW, row_digest(left)), right.withColumn(ROW, row_digest(right))
    if keys:
        added, removed, changed, rows = _by_keys(left, right, keys, pii, sample)
        matched = "keys " + ", ".join(keys)
    else:
        added, removed, changed, rows = _by_digest(left, right, pii, sample)
        matched = "row digest"
    return TableDiff(
        table,
        matched,
        theirs.count(),
        ours.count(),
        added,
        removed,
        changed,
        tuple(c for c in ours.columns if c not in common),
        tuple(c for c in theirs.columns if c not in set(ours.columns)),
        tuple(_column_stats(theirs, ours, common)),
        rows,
    )


def _by_keys(
    left: DataFrame, right: DataFrame, keys: list[str], pii: frozenset[str], sample: int
) -> tuple[int, int, int, tuple[dict[str, Any], ...]]:
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    mine = left.select(*keys, F.col(ROW).alias("__main")).withColumn("__in_main", F.lit(True))
    yours = right.select(*keys, F.col(ROW).alias("__env")).withColumn("__in_env", F.lit(True))
    joined = mine.join(yours, on=keys, how="full_outer")
    counts = joined.agg(
        F.sum(F.when(F.col("__in_main").isNull(), 1).otherwise(0)).alias("added"),
        F.sum(F.when(F.col("__in_env").isNull(), 1).otherwise(0)).alias("removed"),
        F.sum(
            F.when(
                F.col("__in_main") & F.col("__in_env") & (F.col("__main") != F.col("__env")), 1
            ).otherwise(0)
        ).alias("changed"),
    ).first()
    assert counts is not None
    changed_keys = joined.where(F.col("__main") != F.col("__env")).select(*keys).limit(sample)
    before = left.join(changed_keys, on=keys).drop(ROW)
    after = right.join(changed_keys, on=keys).drop(ROW)
    others = [c for c in before.columns if c not in keys]
    pairs = before.select(*keys, *[F.col(f"`{c}`").alias(f"m_{c}") for c in others]).join(
        after.select(*keys, *[F.col(f"`{c}`").alias(f"e_{c}") for c in others]), on=keys
    )
    rows = tuple(_changed_row(r.asDict(), keys, others, pii) for r in pairs.collect())
    return int(counts.added or 0), int(counts.removed or 0), int(counts.changed or 0), rows


def _changed_row(
    row: dict[str, Any], keys: list[str], others: list[str], pii: frozenset[str]
) -> dict[str, Any]:
    """A sample row: its keys, then each column whose value changed as ``main -> env``, a
    column of personal data masked."""
    shown: dict[str, Any] = {k: MASKED if k in pii else _shown(row[k]) for k in keys}
    for c in others:
        before, after = row[f"m_{c}"], row[f"e_{c}"]
        if before != after:
            shown[c] = MASKED if c in pii else f"{_shown(before)} -> {_shown(after)}"
    return shown


def _shown(value: Any) -> Any:
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def _by_digest(
    left: DataFrame, right: DataFrame, pii: frozenset[str], sample: int
) -> tuple[int, int, int, tuple[dict[str, Any], ...]]:
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    both = left.withColumn(SIDE, F.lit(-1)).unionByName(right.withColumn(SIDE, F.lit(1)))
    held = both.groupBy(ROW).agg(F.sum(SIDE).alias(SIDE))
    counts = held.agg(
        F.sum(F.when(F.col(SIDE) > 0, F.col(SIDE)).otherwise(0)).alias("added"),
        F.sum(F.when(F.col(SIDE) < 0, -F.col(SIDE)).otherwise(0)).alias("removed"),
    ).first()
    assert counts is not None
    new = held.where(F.col(SIDE) > 0).select(ROW)
    rows = sample_rows(right.join(new, on=ROW, how="left_semi").drop(ROW), pii, sample)
    return int(counts.added or 0), int(counts.removed or 0), 0, tuple(rows)


def _column_stats(main: DataFrame, env: DataFrame, columns: list[str]) -> list[ColumnDiff]:
    kinds = dict(env.dtypes)
    return [
        ColumnDiff(c, side_main, side_env)
        for c, side_main, side_env in zip(
            columns, _stats(main, columns, kinds), _stats(env, columns, kinds), strict=True
        )
    ]


def _stats(frame: DataFrame, columns: list[str], kinds: dict[str, str]) -> list[dict[str, Any]]:
    """Each column's nulls, distinct values, min and max (and sum of a number), one pass."""
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    parts = []
    for i, c in enumerate(columns):
        col, kind = F.col(f"`{c}`"), kinds[c]
        parts += [F.sum(col.isNull().cast("int")).alias(f"n{i}")]
        parts += [F.countDistinct(col).alias(f"d{i}")]
        orderable = not kind.startswith(("map", "array", "struct", "binary"))
        parts += [F.min(col).alias(f"lo{i}"), F.max(col).alias(f"hi{i}")] if orderable else []
        parts += [F.sum(col).alias(f"s{i}")] if kind.startswith(_NUMERIC) else []
    first = frame.agg(*parts).first() if parts else None
    row = first.asDict() if first is not None else {}
    found = []
    for i, _c in enumerate(columns):
        stats = {"nulls": row.get(f"n{i}") or 0, "distinct": row.get(f"d{i}")}
        for key, name in (("lo", "min"), ("hi", "max"), ("s", "sum")):
            if f"{key}{i}" in row:
                value = row[f"{key}{i}"]
                stats[name] = value if isinstance(value, (int, float, type(None))) else str(value)
        found.append(stats)
    return found
