"""Schema drift of raw files: columns a source's files carry that its schema does not declare.

Reading raw files with the declared schema would drop a new JSON or Parquet column silently,
and a new CSV column would shift every column after it. Ingest therefore compares each new
file's columns (CSV header, JSON keys of the first records, Parquet schema) with the source's
declared columns plus any evolved ones, and raises ``SchemaDrift`` ("schema mismatch") before
reading. The healing action ``evolve_schema`` records the new columns as nullable strings in
the lake's state (``schema__<source>``), with when, by which run and from which files; the next
attempt reads them by name. ``medallion control schema SOURCE --revert`` removes them again.

Only files that decoded cleanly get here (``raw_files``), and every name is checked again
before it is stored: a column name that Spark or the warehouse cannot take is never evolved.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from medallion_assets.catalog.models import Source
from medallion_assets.runtime.raw_files import column_name_problem

if TYPE_CHECKING:
    from medallion_assets.runtime.lake import Lake


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


@dataclass(frozen=True)
class EvolvedColumn:
    """A column evolve_schema added to a source: nullable, read by name."""

    name: str
    type: str = "string"
    evolved_at: float = 0.0
    run_id: str = ""
    files: tuple[str, ...] = ()  # the raw files that carried it first

    @property
    def problem(self) -> str | None:
        """Why this stored name cannot be read (state written before names were checked)."""
        return column_name_problem(self.name)


def state_name(source_name: str) -> str:
    return f"schema__{source_name}"


def read_evolved(lake: Lake, source_name: str) -> list[EvolvedColumn]:
    """Every evolved column of the source, in the order they were added."""
    state = lake.read_state(state_name(source_name))
    return [
        EvolvedColumn(
            str(c["name"]),
            str(c.get("type", "string")),
            float(c.get("evolved_at", 0.0)),
            str(c.get("run_id", "")),
            tuple(c.get("files", ())),
        )
        for c in state.get("columns", ())
        if isinstance(c, dict) and "name" in c
    ]


def evolved_columns(
    lake: Lake, source_name: str, warn: Callable[[str], None] = lambda _m: None
) -> list[tuple[str, str]]:
    """(name, Spark type) of the evolved columns ingest can read, in order. A stored name that
    cannot be a column (state written before names were checked) is left out, and ``warn``
    is told how to remove it."""
    usable = []
    for column in read_evolved(lake, source_name):
        if column.problem is None:
            usable.append((column.name, column.type))
            continue
        warn(
            f"ignored evolved column {column.name[:60]!r} of source {source_name}: "
            f"{column.problem}; remove it with `medallion control schema {source_name} "
            "--revert COLUMN --reason ...`"
        )
    return usable


def evolved_digest(columns: Sequence[tuple[str, str]]) -> str:
    """A short digest of the evolved columns: a bronze version built with other ones (one
    was reverted) is not reused."""
    return hashlib.sha256(json.dumps(list(columns)).encode()).hexdigest()[:16]


def evolve(
    lake: Lake,
    source_name: str,
    new_columns: Mapping[str, Sequence[str]] | Iterable[str],
    run_id: str = "",
) -> list[str]:
    """Add ``new_columns`` (names, or name -> files carrying it) to the source's evolved
    columns as nullable strings; returns those actually added. A name that cannot be a column
    is refused with ValueError, before anything is stored."""
    files = dict(new_columns) if isinstance(new_columns, Mapping) else {}
    names = list(new_columns)
    for name in names:
        problem = column_name_problem(name)
        if problem is not None:
            raise ValueError(
                f"source {source_name}: refusing to evolve column {name[:60]!r}: {problem}; "
                "nothing was stored"
            )
    state = lake.read_state(state_name(source_name))
    columns = list(state.get("columns", ()))
    have = {str(c.get("name", "")).lower() for c in columns}
    added = [c for c in dict.fromkeys(names) if c.lower() not in have]
    now = time.time()
    columns += [
        asdict(EvolvedColumn(c, "string", now, run_id, tuple(files.get(c, ())[:10]))) for c in added
    ]
    lake.write_state(state_name(source_name), {**state, "columns": columns})
    return added


def revert(lake: Lake, source_name: str, names: Iterable[str] | None = None) -> list[str]:
    """Remove evolved columns (all when ``names`` is None); returns those removed. ValueError
    naming the evolved columns when a name is not one of them."""
    state = lake.read_state(state_name(source_name))
    columns = [c for c in state.get("columns", ()) if isinstance(c, dict)]
    have = [str(c.get("name")) for c in columns]
    wanted = have if names is None else list(dict.fromkeys(names))
    unknown = [n for n in wanted if n not in have]
    if unknown:
        raise ValueError(
            f"source {source_name} has no evolved column(s) {', '.join(map(repr, unknown))}; "
            f"its evolved columns are: {', '.join(map(repr, have)) or 'none'}"
        )
    kept = [c for c in columns if str(c.get("name")) not in wanted]
    lake.write_state(state_name(source_name), {**state, "columns": kept})
    return wanted


def detect(
    source_name: str,
    source: Source,
    columns_by_file: Mapping[str, Sequence[str] | None],
    evolved: Iterable[str],
) -> SchemaDrift | None:
    """The drift of the files' columns (file name -> its columns, None when it cannot say)
    against the declared and evolved columns, or None."""
    known = [c.name for c in source.columns] + list(evolved)
    new: dict[str, list[str]] = {}
    for file, columns in columns_by_file.items():
        for column in columns or ():
            if column not in known:
                new.setdefault(column, []).append(file)
    return SchemaDrift(source_name, new, known) if new else None
