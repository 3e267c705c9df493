"""Adapter for our engine in benchmark A: ``medallion_assets.lineage.scan.scan_directory``.

Called exactly as a user would: ``scan_directory(folder, dialect="duckdb", columns=True,
schema=SCHEMA, cache_dir=...)``. With ``cache_dir=None`` nothing is cached ("cold"); with a
folder, the worker fills the cache in an earlier process and then times a later call ("warm").
The result already holds table edges (``.edges``), column edges (``.column_edges``) and the
files that failed (``.errors``), so ``summarise`` only counts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.tools import Adapter, Schema, Summary, bare_column, bare_table, target_stem

MAX_SAMPLES = 5


class OursScan(Adapter):
    name = "ours"
    parser = "sqlglot"

    def __init__(
        self, dialect: str = "duckdb", schema: Schema | None = None, cache_dir: Path | None = None
    ):
        from medallion_assets.lineage.scan import scan_directory

        self._scan = scan_directory
        self.dialect = dialect
        self.schema = schema
        self.cache_dir = cache_dir

    def analyse(self, folder: Path) -> Any:
        return self._scan(
            folder, dialect=self.dialect, columns=True, schema=self.schema, cache_dir=self.cache_dir
        )

    def summarise(self, result: Any) -> Summary:
        sources: dict[str, set[str]] = {}
        for upstream, downstream in result.edges:
            sources.setdefault(target_stem(downstream), set()).add(bare_table(upstream))
        column_edges = {(e.source, e.target) for e in result.column_edges}
        errors = result.errors
        return Summary(
            files=len(set(result.files) | {e.file for e in errors}),
            errors=len({e.file for e in errors}),
            table_edges=len(set(result.edges)),
            column_edges=len(column_edges),
            column_edge_sources=[bare_column(source) for source, _ in column_edges],
            sources={stem: sorted(found) for stem, found in sources.items()},
            error_samples=[f"{e.file}: {e.message}"[:300] for e in errors[:MAX_SAMPLES]],
        )
