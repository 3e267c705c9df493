"""Schema drift of raw files: columns a source's files carry that its schema does not declare.

Reading raw files with the declared schema would drop a new JSON or Parquet column silently,
and a new CSV column would shift every column after it. Ingest therefore compares each new
file's columns (CSV header, JSON keys of the first records, Parquet schema) with the source's
declared columns plus any evolved ones, and raises ``SchemaDrift`` ("schema mismatch") before
reading. The healing action ``evolve_schema`` records the new columns as nullable strings in
the lake's state (``schema__<source>``); the next attempt reads them by name.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from medallion_assets.catalog.models import Source

JSON_SAMPLE_LINES = 200  # records whose keys are read from each new JSON lines file


class SchemaDrift(RuntimeError):
    """Raw files carry columns the source does not declare."""

    def __init__(self, source_name: str, new_columns: dict[str, list[str]], known: list[str]):
        self.source_name = source_name
        self.new_columns = new_columns  # column -> files that carry it
        where = "; ".join(f"{c} in {', '.join(files[:3])}" for c, files in new_columns.items())
        super().__init__(
            f"schema mismatch: source {source_name} has new column(s) {where}; known columns: "
            f"{', '.join(known)}. Declare them in sources.yaml, or let the evolve_schema healing "
            "action add them as nullable string columns"
        )


def state_name(source_name: str) -> str:
    return f"schema__{source_name}"


def evolved_columns(lake: Any, source_name: str) -> list[tuple[str, str]]:
    """(name, Spark type) of the columns evolve_schema added to the source, in order."""
    state = lake.read_state(state_name(source_name))
    return [(c["name"], c["type"]) for c in state.get("columns", ())]


def evolve(lake: Any, source_name: str, new_columns: Iterable[str], run_id: str = "") -> list[str]:
    """Add ``new_columns`` to the source's evolved columns (nullable strings); returns those
    actually added."""
    state = lake.read_state(state_name(source_name))
    columns = list(state.get("columns", ()))
    have = {c["name"] for c in columns}
    added = [c for c in new_columns if c not in have]
    columns += [
        {"name": c, "type": "string", "evolved_at": time.time(), "run_id": run_id} for c in added
    ]
    lake.write_state(state_name(source_name), {**state, "columns": columns})
    return added


def file_columns(path: Path, source: Source) -> list[str] | None:
    """The columns one raw file carries, in file order; None when the file cannot say (CSV
    without a header)."""
    if source.format == "parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    if source.format == "csv":
        if not source.csv_header:
            return None
        with path.open(newline="", encoding="utf-8", errors="replace") as handle:
            return next(csv.reader(handle), [])
    keys: dict[str, None] = {}
    with path.open(encoding="utf-8", errors="replace") as handle:
        for i, line in enumerate(handle):
            if i >= JSON_SAMPLE_LINES:
                break
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a malformed record goes to quarantine; it says nothing of columns
            if isinstance(record, dict):
                keys.update(dict.fromkeys(record))
    return list(keys)


def detect(
    source_name: str, source: Source, paths: Iterable[Path], evolved: Iterable[str]
) -> SchemaDrift | None:
    known = [c.name for c in source.columns] + list(evolved)
    new: dict[str, list[str]] = {}
    for path in paths:
        for column in file_columns(path, source) or ():
            if column not in known:
                new.setdefault(column, []).append(path.name)
    return SchemaDrift(source_name, new, known) if new else None
