"""An ``scd2`` table's history: every version of each key its SQL has made, in the order of the
versions' ``updated_at``, with when each began and ended.

A build puts what the SQL makes now (over the whole input, or over the driving rows of the keys
that changed) beside the history the table holds, then, per key:

- one row per ``updated_at``: a version the SQL makes again replaces the one held (a correction
  re-delivered), and one held and not made again stays (the input may not keep it);
- a version whose tracked columns equal the version before it is no new version (a re-export
  changes nothing), so the earlier one stays;
- ``valid_from`` is the version's ``updated_at``, ``valid_to`` the next version's (NULL for the
  current one), ``is_current`` whether it has none. A late version lands in its place.

What cannot be placed is refused, naming the table and a key: a row without ``updated_at``, or
two different versions of a key at the same ``updated_at``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from medallion_assets.catalog.kinds import HISTORY_COLUMNS
from medallion_assets.errors import PermanentError
from medallion_assets.runtime.samples import key_sample

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from medallion_assets.catalog import Dataset

_MADE = "__medallion_made"  # 0: made by this build's SQL, 1: held by the table
_DIGEST = "__medallion_tracked"


class UnplacedVersions(PermanentError):
    """Rows the history cannot place: no ``updated_at``, or two versions at one instant."""

    error_code = "UNPLACED_VERSIONS"
    fix = "give every version of a key its own updated_at in the SQL's output"


def sql_columns(columns: list[str]) -> list[str]:
    """The table's columns its SQL makes: all but those the history adds."""
    return [c for c in columns if c.lower() not in HISTORY_COLUMNS]


def history(dataset: Dataset, made: DataFrame, held: DataFrame | None) -> DataFrame:
    """The history of the keys in ``made`` (what the SQL makes now) and ``held`` (the table's
    rows of those keys, or None): the SQL's columns, then valid_from, valid_to, is_current."""
    # pyspark: loaded only where Spark runs
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    settings = dataset.settings
    columns = made.columns
    named = {c.lower(): c for c in columns}
    keys = [named[k.lower()] for k in settings.keys]
    updated_at = named[(settings.updated_at or "").lower()]
    tracked = [named[c.lower()] for c in settings.track] or [
        c for c in columns if c not in keys and c != updated_at
    ]
    _refuse_unplaced(dataset, made, keys, updated_at, tracked)
    rows = made.withColumn(_MADE, F.lit(0))
    if held is not None:
        rows = rows.unionByName(
            _as_made(held, made).withColumn(_MADE, F.lit(1)), allowMissingColumns=False
        )
    rows = rows.withColumn(_DIGEST, _digest(tracked))
    cols = [F.col(f"`{c}`") for c in keys]
    instant = Window.partitionBy(*cols, F.col(f"`{updated_at}`")).orderBy(_MADE)
    ordered = Window.partitionBy(*cols).orderBy(F.col(f"`{updated_at}`"))
    versions = (
        rows.withColumn("__n", F.row_number().over(instant))
        .where("__n = 1")
        .withColumn("__before", F.lag(_DIGEST).over(ordered))
        .where(F.col("__before").isNull() | (F.col("__before") != F.col(_DIGEST)))
    )
    began = F.col(f"`{updated_at}`").cast("timestamp")
    ended = versions.select(
        *[F.col(f"`{c}`") for c in columns],
        began.alias("valid_from"),
        F.lead(began).over(ordered).alias("valid_to"),
    )
    return ended.withColumn("is_current", F.col("valid_to").isNull())


def _as_made(held: DataFrame, made: DataFrame) -> DataFrame:
    """The table's rows with the columns the SQL makes now, in its order: a column the SQL
    no longer makes is left out, a new one is NULL in the versions held."""
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    have = {c.lower(): c for c in held.columns}
    return held.select(
        *[
            F.col(f"`{have[c.lower()]}`").cast(t).alias(c)
            if c.lower() in have
            else F.lit(None).cast(t).alias(c)
            for c, t in ((f.name, f.dataType) for f in made.schema.fields)
        ]
    )


def _digest(tracked: list[str]):  # type: ignore[no-untyped-def]  # a pyspark Column
    """The tracked values of a row as one comparable string (NULLs included, maps too)."""
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    return F.to_json(F.struct(*[F.col(f"`{c}`") for c in tracked]), {"ignoreNullFields": "false"})


def _refuse_unplaced(
    dataset: Dataset, made: DataFrame, keys: list[str], updated_at: str, tracked: list[str]
) -> None:
    """``UnplacedVersions`` for a row of ``made`` without ``updated_at``, or two versions of a
    key with different tracked values at the same one (the key named unless it is personal)."""
    # pyspark: loaded only where Spark runs
    from pyspark.sql import functions as F

    where = f"{dataset.sql_path}: {dataset.name} (kind scd2)"
    unplaced = made.where(F.col(f"`{updated_at}`").isNull())
    found = unplaced.limit(1).collect()
    if found:
        sample = key_sample(dataset, keys, found[0])
        raise UnplacedVersions(
            f"{where}: {unplaced.count()} row(s) have no {updated_at} (e.g. {sample}), "
            "so their place in the history is unknown; give every row one in the SQL"
        )
    clashing = (
        made.select(*keys, updated_at, _digest(tracked).alias(_DIGEST))
        .groupBy(*[F.col(f"`{c}`") for c in (*keys, updated_at)])
        .agg(F.countDistinct(_DIGEST).alias("versions"))
        .where("versions > 1")
    )
    found = clashing.limit(1).collect()
    if found:
        sample = key_sample(dataset, keys, found[0])
        raise UnplacedVersions(
            f"{where}: {clashing.count()} key(s) have two different versions at one "
            f"{updated_at} (e.g. {sample} at {found[0][updated_at]}), so which came "
            f"first is unknown; make {updated_at} tell them apart, or de-duplicate them in the SQL"
        )
