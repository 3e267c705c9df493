"""Adapters for the competing lineage tools of benchmark A: clgraph and sqllineage.

Both are given the same CTAS files as our engine and asked for table AND column lineage:

- clgraph (``Pipeline.from_sql_files``) parses with sqlglot and always builds its column
  graph (``pipeline.column_graph``) while constructing the pipeline; table lineage is its
  ``table_graph``. It takes no schema. The timed part is ``from_sql_files`` alone; flattening
  its column graph to table-column -> table-column edges
  (``get_simplified_column_graph()``) is left out of the clock, which favours clgraph.
  It does not raise on a query it cannot handle: it logs a warning "Failed to build lineage
  ..." or, at INFO, "Skipping lineage ... (no SELECT statement)", and leaves that query
  without a column graph; those files are counted as errors.
- sqllineage (``LineageRunner``) parses with sqlfluff, its default parser (the sqlparse
  "non-validating" parser is deprecated). It is lazy, so the timed part calls
  ``source_tables``, ``target_tables`` and ``get_column_lineage()`` for every file. It is
  given the TPC schema through its ``DummyMetaDataProvider``, as our engine is, so it can
  resolve unqualified columns. sqllineage consults that schema only for schema-qualified
  tables, so unqualified tables are placed in a default schema ``main`` (its documented
  ``DEFAULT_SCHEMA`` setting, set for the analysing thread only) and the schema is keyed
  ``main.<table>``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from bench.tools import Adapter, Schema, Summary, bare_column, bare_table, target_stem

MAX_SAMPLES = 5
DEFAULT_SCHEMA = "main"  # sqllineage's schema for unqualified tables (see the docstring)


class _Collect(logging.Handler):
    """Keeps clgraph's per-query failure warnings (it logs, it does not raise)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Failed to build lineage"):
            self.messages.append(message)


class CLGraph(Adapter):
    name = "clgraph"
    parser = "sqlglot"

    def __init__(self, dialect: str = "duckdb", schema: Schema | None = None):
        from clgraph import Pipeline

        self._pipeline = Pipeline
        self.dialect = dialect  # clgraph has no schema input: ``schema`` is ignored
        logger = logging.getLogger("clgraph")
        self._log = next((h for h in logger.handlers if isinstance(h, _Collect)), _Collect())
        if self._log not in logger.handlers:  # one collector, however many adapters
            logger.addHandler(self._log)
        logger.setLevel(logging.WARNING)  # its default level; INFO would add records
        logger.propagate = False  # keep its ~1,000 ambiguity warnings off the console

    def analyse(self, folder: Path) -> Any:
        self._log.messages.clear()
        return self._pipeline.from_sql_files(str(folder), dialect=self.dialect)

    def summarise(self, pipeline: Any) -> Summary:
        queries = pipeline.table_graph.queries
        sources: dict[str, list[str]] = {}
        table_edges: set[tuple[str, str]] = set()
        for query in queries.values():
            stem = target_stem(query.destination_table or query.query_id)
            found = sorted({bare_table(t) for t in query.source_tables})
            sources[stem] = found
            table_edges.update((t, stem) for t in found)
        simplified = pipeline.get_simplified_column_graph()
        column_edges = {(e.from_node.full_name, e.to_node.full_name) for e in simplified.edges}
        missing = sorted(set(queries) - set(pipeline.query_graphs))
        failed = {m.split()[4].rstrip(":") for m in self._log.messages if len(m.split()) > 4}
        samples = list(self._log.messages)
        samples += [
            f"{q}: skipped, no column graph (logged at INFO)" for q in missing if q not in failed
        ]
        return Summary(
            files=len(queries),
            errors=len(missing),
            table_edges=len(table_edges),
            column_edges=len(column_edges),
            column_edge_sources=[bare_column(source) for source, _ in column_edges],
            sources=sources,
            error_samples=samples[:MAX_SAMPLES],
        )


class SQLLineage(Adapter):
    name = "sqllineage"
    parser = "sqlfluff"

    def __init__(self, dialect: str = "duckdb", schema: Schema | None = None):
        from sqllineage.config import SQLLineageConfig
        from sqllineage.core.metadata.dummy import DummyMetaDataProvider
        from sqllineage.runner import LineageRunner

        self._runner = LineageRunner
        self._config = SQLLineageConfig
        self.dialect = dialect
        metadata = {f"{DEFAULT_SCHEMA}.{t}": list(c) for t, c in (schema or {}).items()}
        self._metadata = DummyMetaDataProvider(metadata)

    def analyse(self, folder: Path) -> Any:
        with self._config(DEFAULT_SCHEMA=DEFAULT_SCHEMA):
            return self._analyse(folder)

    def _analyse(self, folder: Path) -> list[tuple[Any, ...]]:
        results: list[tuple[Any, ...]] = []
        for path in sorted(folder.glob("*.sql")):
            try:
                runner = self._runner(
                    path.read_text(encoding="utf-8"),
                    dialect=self.dialect,
                    metadata_provider=self._metadata,
                )
                results.append(
                    (
                        path.stem,
                        runner.source_tables,
                        runner.target_tables,
                        runner.get_column_lineage(),
                    )
                )
            except Exception as error:  # any failure counts as an errored file
                results.append((path.stem, error, None, None))
        return results

    def summarise(self, results: Any) -> Summary:
        sources: dict[str, list[str]] = {}
        table_edges: set[tuple[str, str]] = set()
        column_edges: set[tuple[str, str]] = set()
        samples = []
        errors = 0
        for stem, source_tables, target_tables, paths in results:
            if isinstance(source_tables, Exception):
                errors += 1
                samples.append(f"{stem}: {type(source_tables).__name__}: {source_tables}"[:300])
                continue
            found = sorted({bare_table(str(t)) for t in source_tables})
            sources[stem] = found
            for target in target_tables:
                table_edges.update((t, target_stem(str(target))) for t in found)
            column_edges.update((str(p[0]), str(p[-1])) for p in paths)
        return Summary(
            files=len(results),
            errors=errors,
            table_edges=len(table_edges),
            column_edges=len(column_edges),
            column_edge_sources=[bare_column(source) for source, _ in column_edges],
            sources=sources,
            error_samples=samples[:MAX_SAMPLES],
        )
