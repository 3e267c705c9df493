"""What the lake records and returns: what produced a write, a write staged on its branch, what
published versions occupy, and the errors of a layout or a day's rows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_assets.errors import PermanentError, ResourceError
from medallion_assets.lake import tables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass(frozen=True)
class Produced:
    """What a write records in its snapshot's summary: the code and the inputs it was built
    from (input table -> the version read), the run, and any small extra facts."""

    code_version: str
    inputs: Mapping[str, str] = field(default_factory=dict)
    run_id: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    shape: str = ""  # the SQL's fingerprints (lineage.shape), JSON: what a plan compares

    def summary(self, partition: str | None) -> dict[str, str]:
        props = {
            "code-version": self.code_version,
            "inputs": json.dumps(dict(self.inputs), sort_keys=True),
            "run-id": self.run_id,
            "extra": json.dumps(dict(self.extra), sort_keys=True, default=str),
        }
        if self.shape:
            props["shape"] = self.shape
        return {**props, "partition": partition} if partition else props


OLD_LAYOUT = "CURRENT"  # the pointer file of the folder lake this one replaced


class RowsOutsideTheDay(PermanentError):
    """A daily table's build produced rows of other days (or of no day)."""

    error_code = "ROWS_OUTSIDE_THE_DAY"
    fix = "make the SQL produce only rows of the day it builds"


class OldLakeLayout(ResourceError):
    """The warehouse folder holds tables of the folder layout used before Iceberg."""


@dataclass(frozen=True)
class StagedWrite:
    """A write staged on its branch and the DataFrame reading exactly it (for the checks)."""

    write: tables.Staged
    frame: DataFrame

    @property
    def rows(self) -> int:
        return self.write.rows


@dataclass(frozen=True)
class Footprint:
    """What published versions occupy: data files, bytes, and their columns (name, type)."""

    files: int
    bytes: int
    columns: tuple[tuple[str, str], ...]
    paths: tuple[str, ...] = ()  # the data files' locations (file:/… or s3a://…)


def storable(frame: DataFrame) -> DataFrame:
    """Iceberg has no type for a column that is NULL by construction: store it as a string."""
    # pyspark: loaded only where Spark runs (the CLI reads the lake without it)
    from pyspark.sql import functions as F
    from pyspark.sql.types import NullType

    for f in frame.schema.fields:
        if isinstance(f.dataType, NullType):
            frame = frame.withColumn(f.name, F.col(f"`{f.name}`").cast("string"))
    return frame


def check_layout(root: Path | None) -> None:
    """``OldLakeLayout`` when the warehouse folder holds the folder layout of before."""
    if root is None or not root.is_dir():
        return
    old = next(root.glob(f"*/*/{OLD_LAYOUT}"), None) or next(
        root.glob(f"*/*/partitions/*/{OLD_LAYOUT}"), None
    )
    if old is not None:
        raise OldLakeLayout(
            f"{root} holds tables in the folder layout of before the Iceberg lake "
            f"({old.relative_to(root)}); move the folder away (or delete it) and run again "
            "to rebuild every table from raw"
        )
