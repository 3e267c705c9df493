"""Schema drift of raw files: columns a source's files carry that its schema does not declare.

Reading raw files with the declared schema would drop a new JSON or Parquet column silently,
and a new CSV column would shift every column after it. Ingest therefore compares each new
file's columns (CSV header, JSON keys of the first records, Parquet schema) with the source's
declared columns plus any evolved ones, and raises ``SchemaDrift`` ("schema mismatch") before
reading. The healing action ``evolve_schema`` records the new columns as nullable strings in
the control store (``control/state.py``), with when, by which run and from which files; the next
attempt reads them by name. ``medallion control schema SOURCE --revert`` removes them again.

Only files that decoded cleanly get here (``raw_files``), and every name is checked again
before it is stored: a column name that Spark or the warehouse cannot take is never evolved.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from medallion_assets.catalog.sources import Source
from medallion_assets.control.state import EvolvedColumn, RuntimeState
from medallion_assets.runtime.ingest.raw_files import column_name_problem

__all__ = ["EvolvedColumn", "SchemaDrift", "evolve", "read_evolved"]


class SchemaDrift(RuntimeError):
    """Raw files carry columns the source does not declare. Retrying the same files finds the
    same columns: permanent, unless a healing rule (``evolve_schema``) says otherwise."""

    permanent = True
    error_code = "SCHEMA_MISMATCH"
    fix = (
        "declare the new columns in sources.yaml, or let a healing rule matching 'schema "
        "mismatch' with actions [evolve_schema] and then: retry add them as nullable strings"
    )

    def __init__(self, source_name: str, new_columns: dict[str, list[str]], known: list[str]):
        self.source_name = source_name
        self.new_columns = new_columns  # column -> files that carry it
        where = "; ".join(f"{c} in {', '.join(files[:3])}" for c, files in new_columns.items())
        super().__init__(
            f"schema mismatch: source {source_name} has new column(s) {where}; known columns: "
            f"{', '.join(known)}"
        )


def read_evolved(state: RuntimeState, source_name: str) -> list[EvolvedColumn]:
    """Every evolved column of the source, in the order they were added."""
    return state.evolved(source_name).get(source_name, [])


def evolved_columns(
    state: RuntimeState, source_name: str, warn: Callable[[str], None] = lambda _m: None
) -> list[tuple[str, str]]:
    """(name, Spark type) of the evolved columns ingest can read, in order. A stored name that
    cannot be a column (state written before names were checked) is left out, and ``warn``
    is told how to remove it."""
    usable = []
    for column in read_evolved(state, source_name):
        problem = column_name_problem(column.name)
        if problem is None:
            usable.append((column.name, column.type))
            continue
        warn(
            f"ignored evolved column {column.name[:60]!r} of source {source_name}: "
            f"{problem}; remove it with `medallion control schema {source_name} "
            "--revert COLUMN --reason ...`"
        )
    return usable


def evolved_digest(columns: Sequence[tuple[str, str]]) -> str:
    """A short digest of the evolved columns: a bronze version built with other ones (one
    was reverted) is not reused."""
    return hashlib.sha256(json.dumps(list(columns)).encode()).hexdigest()[:16]


def evolve(
    state: RuntimeState,
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
    now = time.time()
    columns = [
        EvolvedColumn(c, "string", now, run_id, tuple(files.get(c, ())[:10]))
        for c in dict.fromkeys(names)
    ]
    return state.add_evolved(source_name, columns)


def revert(
    state: RuntimeState,
    source_name: str,
    names: Iterable[str] | None = None,
    reason: str = "",
    changed_by: str = "",
) -> list[str]:
    """Remove evolved columns (all when ``names`` is None); returns those removed, audited
    with ``reason`` and ``changed_by``. ValueError naming the evolved columns when a name is
    not one of them."""
    return state.revert_evolved(source_name, names, reason, changed_by)


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
