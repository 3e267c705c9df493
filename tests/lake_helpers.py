"""Putting test data into a lake as the pipeline would have published it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medallion_assets.lake import Lake, Produced, Version


def publish_frame(
    lake: Lake,
    spark: Any,
    frame: Any,
    table: str,
    code_version: str = "test",
    inputs: Mapping[str, str] | None = None,
    partition: str | None = None,
    partition_column: str | None = None,
) -> Version:
    """Stage ``frame`` as ``table`` (its day) and publish it: the version now current."""
    staged = lake.stage(
        spark,
        frame,
        table,
        Produced(code_version, dict(inputs or {})),
        partition=partition,
        partition_column=partition_column,
    )
    return lake.publish(spark, staged)


def data_files(lake: Lake, version: Version) -> list[Path]:
    """The local Parquet files holding a published version."""
    return [Path(p.removeprefix("file:")) for p in lake.footprint([version]).paths]


def abandon_staged_output(lake: Lake, spark: Any, dataset: Any, views: Mapping[str, str]) -> None:
    """Stage ``dataset``'s output and leave it on its branch, neither published nor dropped:
    what an attempt killed between staging and publishing leaves behind."""
    from medallion_assets.lineage.spark_sql import spark_script

    frame = spark_script(dataset.sql, dataset.dialect, dataset.name, views).run(spark)
    lake.stage(spark, frame, dataset.name, Produced("killed-attempt"))


def staging_branches(lake: Lake, table: str) -> list[str]:
    """The staging branches left on ``table``."""
    from medallion_assets.lake import tables, versions

    loaded = versions.load(versions.open_catalog(lake.catalog), table)
    refs = loaded.metadata.refs if loaded is not None else {}
    return sorted(name for name in refs if name.startswith(tables.STAGE_BRANCH))
