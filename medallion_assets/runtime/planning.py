"""How a step's Spark plans its queries. Adaptive execution (``spark_session.adaptive_conf``)
sizes shuffles and picks joins from what each stage wrote, at the price of planning the rest
of the query again after every stage, each stage its own Spark job. For a build whose files
are small, that price is most of the build: the demo's one-object rerun at 100,000 orders
spent ~40 Spark jobs recomputing 969 rows of gold.fraud_features. A small build (an
increment reading up to 128 MB of files, a build in full up to 32 MB) is planned once,
statically, with a shuffle partition per ~32 MB of the files it reads."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from medallion_assets.lake import Lake

# Files read past these sizes get adaptive execution: a static plan's guesses (a join's side
# estimated from whole files, a semi-join's output as its input) cost little below them. An
# increment shuffles the rows of the keys it touched, a build in full its whole input.
STATIC_PLAN_BYTES = 128 * 1024 * 1024  # an increment's
STATIC_FULL_BYTES = 32 * 1024 * 1024  # a build in full's
_BYTES_PER_PARTITION = 32 * 1024 * 1024


def planned_for(files_bytes: int, shuffle_partitions: int, most: int) -> dict[str, str]:
    """The SQL settings of a step that reads ``files_bytes`` of data files: none (adaptive
    execution, as the session has it) past ``most``, else a static plan with a shuffle
    partition per 32 MB (at least 2, at most ``shuffle_partitions``).

    >>> planned_for(45 * 2**20, 16, STATIC_PLAN_BYTES)
    {'spark.sql.adaptive.enabled': 'false', 'spark.sql.shuffle.partitions': '2'}
    >>> planned_for(120 * 2**20, 16, STATIC_PLAN_BYTES)["spark.sql.shuffle.partitions"]
    '4'
    >>> planned_for(45 * 2**20, 16, STATIC_FULL_BYTES)
    {}
    """
    if files_bytes > most:
        return {}
    wanted = math.ceil(files_bytes / _BYTES_PER_PARTITION)
    partitions = min(max(2, shuffle_partitions), max(2, wanted))
    return {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": str(partitions)}


def files_bytes(lake: Lake, tables: Iterable[str]) -> int | None:
    """The data files of ``tables`` as published (a daily table's largest day's snapshot:
    the table's size then); None when one's size is not known (no version, or written by
    another engine), which a static plan must not guess."""
    total = 0
    for table in tables:
        sizes = [v.files_bytes for v in lake.current_versions(table)]
        if not sizes or min(sizes) <= 0:
            return None
        total += max(sizes)
    return total


def plan_small(
    spark: SparkSession, lake: Lake, tables: Iterable[str], increment: bool
) -> Mapping[str, str]:
    """Plan ``spark``'s (a step's own session) queries statically when ``tables``, what the
    step reads and writes, are small for an ``increment`` or a build in full
    (``planned_for``, within the session's shuffle partitions); the settings made, if any."""
    size = files_bytes(lake, tables)
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions") or 2)
    most = STATIC_PLAN_BYTES if increment else STATIC_FULL_BYTES
    chosen = planned_for(size, partitions, most) if size is not None else {}
    for key, value in chosen.items():
        spark.conf.set(key, value)
    return chosen
