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
