"""Helpers for tests and notebooks: read a table's current published version.

>>> from medallion_assets.testing import read_table
>>> orders = read_table("silver.orders_usd")               # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from medallion_assets.lake import Lake
from medallion_assets.runtime.spark_session import spark_session
from medallion_assets.settings import MedallionSettings

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from medallion_assets.settings import MedallionSettings


@overload
def read_table(
    name: str,
    as_: Literal["pandas"] = "pandas",
    *,
    project: Path | str | None = None,
    lake_root: Path | str | None = None,
    spark: SparkSession | None = None,
    snapshot: int | str | None = None,
) -> Any: ...  # a pandas DataFrame (pandas ships no type information)


@overload
def read_table(
    name: str,
    as_: Literal["spark"],
    *,
    project: Path | str | None = None,
    lake_root: Path | str | None = None,
    spark: SparkSession | None = None,
    snapshot: int | str | None = None,
) -> DataFrame: ...


def read_table(
    name: str,
    as_: str = "pandas",
    *,
    project: Path | str | None = None,
    lake_root: Path | str | None = None,
    spark: SparkSession | None = None,
    snapshot: int | str | None = None,
    env: str | None = None,
) -> Any:
    """The current version of ``name`` (all partitions), or its Iceberg ``snapshot`` (an id
    from ``medallion table history``), as a pandas or Spark DataFrame; ``env``: as the dev
    environment of that name sees it (its version, else main's).

        The lake is ``lake_root``, else ``$MEDALLION_LAKE``, else ``$MEDALLION_HOME/lake``, else
        ``<project>/.medallion/lake`` with the project ``$MEDALLION_PROJECT`` or the current folder;
        its catalog is ``$MEDALLION_LAKE_CATALOG`` or the embedded one.
    """

    settings = _settings(project, lake_root)
    lake = Lake.of(settings).in_env(env)
    if as_ not in ("pandas", "spark"):
        raise ValueError(f"as_ must be 'pandas' or 'spark', not {as_!r}")
    session = None
    if as_ == "spark":
        session = spark or spark_session(settings)
    if snapshot is not None:
        if session is not None:
            return lake.read_snapshot(session, name, int(snapshot))
        return _valid_text(lake.read_snapshot_arrow(name, int(snapshot))).to_pandas()
    versions = lake.current_versions(name)
    if not versions:
        raise LookupError(f"{name} has no published version in the lake {lake.where()}")
    if session is not None:
        return lake.read(session, versions)
    return _valid_text(lake.read_arrow(versions)).to_pandas()


def _valid_text(table: pa.Table) -> pa.Table:
    """``table`` with bytes that are not UTF-8 in its text columns replaced by U+FFFD.

    Spark keeps a string's bytes as they came, so a quarantined record of a badly encoded
    file holds invalid UTF-8 that pandas cannot take. The Parquet file keeps the raw bytes
    (``pyarrow.parquet`` reads them as they are)."""
    # pyiceberg and pyarrow: loaded only when the lake is read without Spark
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            continue
        column = table.column(i)
        try:
            column.validate(full=True)
        except pa.ArrowInvalid:
            raw = column.cast(pa.large_binary()).to_pylist()
            text = [None if v is None else v.decode("utf-8", "replace") for v in raw]
            table = table.set_column(i, field, pa.array(text, type=field.type))
    return table


def _settings(project: Path | str | None, lake_root: Path | str | None) -> MedallionSettings:

    env = dict(os.environ)
    if lake_root is not None:
        env["MEDALLION_LAKE"] = str(lake_root)
    return MedallionSettings.from_env(env, Path(project) if project else None)
