"""Run a MERGE INTO file on Spark: the new version of its table is the MERGE of the source into
the table's current version (an empty table on the first build), computed by one query.

Columns: the current version's, then any the MERGE writes that it lacks (new columns hold NULL
in the rows already there); on the first build, the columns the MERGE writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from medallion_assets.catalog import Dataset
from medallion_assets.lineage.merge_clauses import MergeSpec, merge_spec
from medallion_assets.lineage.script import spark_preamble, spark_sql
from medallion_assets.lineage.statement import SqlError, parse_script
from medallion_assets.runtime.errors import PermanentError
from medallion_assets.runtime.lake import Lake, TableVersion
from medallion_assets.runtime.merge_sql import CONFLICT_MARKER, defined_columns_sql, merge_query
from medallion_assets.runtime.spark_sql import read_views, view_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


class MergeNotRunnable(PermanentError):
    """A MERGE whose clauses cannot be turned into the table's rows; the message says why."""

    error_code = "MERGE_NOT_RUNNABLE"
    fix = "correct the MERGE statement as the message says"


class MergeConflict(PermanentError):
    """A target row matched more than one source row: the same data would fail again."""

    error_code = "MERGE_CARDINALITY_VIOLATION"
    fix = "make the MERGE's ON condition match at most one source row per target row"


def merge_frame(
    spark: SparkSession,
    lake: Lake,
    dataset: Dataset,
    current: TableVersion | None,
    views: Mapping[str, str],
) -> tuple[DataFrame, str]:
    """(the table's rows after the MERGE, the Spark SQL computing them)."""
    try:
        spec = spark_merge(dataset.sql, dataset.dialect, dataset.name, views)
        for statement in spec.preamble:
            spark.sql(statement)
        source_columns = spark.sql(spec.source_sql).columns
        defined = _storable(spark.sql(defined_columns_sql(spec, source_columns)).schema)
        target = _current_rows(spark, lake, current, defined)
        target_view = f"{view_name(dataset.name)}__current"
        target.createOrReplaceTempView(target_view)
        have = {f.name.lower() for f in target.schema.fields}
        output = [(f.name, f.dataType.simpleString()) for f in target.schema.fields]
        output += [
            (f.name, f.dataType.simpleString()) for f in defined.fields if f.name not in have
        ]
        query = merge_query(spec, target_view, target.columns, output, source_columns)
    except SqlError as error:
        raise MergeNotRunnable(f"{dataset.sql_path}: {error}") from None
    return spark.sql(query), query


def spark_merge(sql: str, dialect: str, target: str, views: Mapping[str, str]) -> MergeSpec:
    """The MERGE of a dataset's file, with every table it reads pointed at its view, and the
    file's preamble (temporary views, functions) in Spark SQL."""
    script, statement = parse_script(sql, dialect, target, inline=False)
    merge = read_views(statement.expression, views)  # every table but the target itself
    preamble = tuple(spark_sql(read_views(s, views)) for s in spark_preamble(script, dialect))
    return replace(merge_spec(merge), preamble=preamble)


def _current_rows(
    spark: SparkSession, lake: Lake, current: TableVersion | None, columns: StructType
) -> DataFrame:
    """The target's current version, or an empty table of ``columns`` before the first one."""
    if current is None:
        return spark.createDataFrame([], columns)
    return lake.read(spark, [current])


def _storable(schema: StructType) -> StructType:
    """Parquet has no type for a column that is NULL by construction: store it as a string."""
    from pyspark.sql.types import NullType, StringType, StructField, StructType

    return StructType(
        [
            StructField(f.name, StringType() if isinstance(f.dataType, NullType) else f.dataType)
            for f in schema.fields
        ]
    )


@contextmanager
def merge_errors(dataset: Dataset) -> Iterator[None]:
    """Turn Spark's failure of the cardinality check into a ``MergeConflict`` naming the file."""
    try:
        yield
    except Exception as error:
        if CONFLICT_MARKER not in str(error):
            raise
        raise MergeConflict(
            f"{dataset.sql_path}: MERGE INTO {dataset.name}: a target row matched more than one "
            "source row (Spark and Delta reject this); make the ON condition match at most one "
            "source row per target row, e.g. deduplicate the source"
        ) from None


__all__ = ["MergeConflict", "MergeNotRunnable", "merge_errors", "merge_frame"]
