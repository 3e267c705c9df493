"""Analyse a set of SQL files together: table lineage first, then column lineage in dependency
order, so a table's derived schema is known before the files that read it (``SELECT *``
expansion across files). Results are cached by content hash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from medallion_assets.lineage.cache import LineageCache, content_key
from medallion_assets.lineage.columns import Schema
from medallion_assets.lineage.dag import DAG, CycleError
from medallion_assets.lineage.file_lineage import (
    ColumnLineage,
    FileLineage,
    schema_subset,
    statement_columns,
)
from medallion_assets.lineage.script import Unparsable
from medallion_assets.lineage.statement import SqlError, Statement, parse_statement
from medallion_assets.lineage.token_tables import words_lineage
from medallion_assets.lineage.unknown_columns import unknown_columns


@dataclass(frozen=True)
class SqlFile:
    label: str  # path shown in messages, e.g. "sql/silver/orders_usd.sql"
    text: str
    dialect: str
    default_target: str | None  # target of a bare SELECT


@dataclass(frozen=True)
class FileError:
    """Why one file is missing from the lineage, in part or in whole.

    ``stage`` says what is lost: ``read`` and ``statement`` (the file gives no lineage),
    ``columns`` (its table edges are kept, its column lineage is not), ``cycle`` (its tables
    read, through other files, what they produce). ``kind`` is the statement's kind (``select``,
    ``insert``, ``merge``, ...) when it was recognised.
    """

    file: str
    message: str
    kind: str | None = None
    stage: str = "statement"


@dataclass(frozen=True)
class Analysis:
    lineage: Mapping[str, FileLineage]  # by file label
    errors: tuple[FileError, ...]
    parsed: int  # files parsed in this build (0 when everything came from the cache)


def analyze(
    files: Sequence[SqlFile],
    base_schema: Schema,
    *,
    columns: bool = True,
    cache: LineageCache | None = None,
    save_cache: bool = True,
    words: bool = False,
    added: Mapping[str, Sequence[tuple[str, str, tuple[str, ...]]]] | None = None,
) -> Analysis:
    """Lineage for every file; a file that fails is reported in ``errors`` and the rest go on.

    ``save_cache=False`` lets a caller run several analyses on one cache and save it once.
    ``words=True`` keeps the table lineage of a file that does not parse, read from its tokens
    (``token_tables``), with an error of stage ``columns``: a scan of foreign SQL wants it, a
    project (whose files Spark must run as parsed) does not. ``added``: columns a table's kind
    adds to what its SQL makes (target -> (name, type, the output column it is computed
    from)), which the files reading it may use (an scd2 table's valid_from, ...).
    """
    run = _Run(base_schema, cache, words)
    run.added = dict(added or {})
    for sql_file in files:
        run.table_level(sql_file)
    if columns:
        for sql_file in run.column_order(files):
            run.column_level(sql_file)
    if cache is not None and save_cache:
        cache.save()
    lineage = {f.label: run.results[f.label] for f in files if f.label in run.results}
    return Analysis(lineage, tuple(run.errors), run.parsed)


class _Run:
    def __init__(self, base_schema: Schema, cache: LineageCache | None, words: bool = False):
        self.base_schema = base_schema
        self.cache = cache
        self.words = words
        self.unparsed: set[str] = set()  # labels whose tables were read from their tokens
        self.results: dict[str, FileLineage] = {}
        self.schemas: dict[str, dict[str, str]] = {}  # derived output schemas by target
        self.statements: dict[str, Statement] = {}
        self.keys: dict[str, str] = {}
        self.errors: list[FileError] = []
        self.parsed = 0
        self.added: dict[str, Sequence[tuple[str, str, tuple[str, ...]]]] = {}

    def _statement(self, sql_file: SqlFile) -> Statement:
        if sql_file.label not in self.statements:
            self.parsed += 1
            self.statements[sql_file.label] = parse_statement(
                sql_file.text, sql_file.dialect, sql_file.default_target
            )
        return self.statements[sql_file.label]

    def table_level(self, sql_file: SqlFile) -> None:
        key = content_key("table", sql_file.dialect, sql_file.default_target or "", sql_file.text)
        self.keys[sql_file.label] = key
        cached = self.cache.get(key) if self.cache else None
        if cached is not None:
            try:
                self.results[sql_file.label] = FileLineage(
                    str(cached["target"]), str(cached["kind"]), tuple(cached["sources"]), None
                )
                return
            except (KeyError, TypeError, ValueError):
                pass  # a damaged entry is a miss: parse again
        try:
            statement = self._statement(sql_file)
        except Exception as error:  # sqlglot's own errors too: one file never stops the rest
            message = failure_message(error, "statement")
            if not (
                self.words and isinstance(error, Unparsable) and self._by_words(sql_file, message)
            ):
                self.errors.append(FileError(sql_file.label, message))
            return
        result = FileLineage(statement.target, statement.kind, statement.sources, None)
        self.results[sql_file.label] = result
        if self.cache:
            self.cache.put(
                key, {"target": result.target, "kind": result.kind, "sources": list(result.sources)}
            )

    def _by_words(self, sql_file: SqlFile, message: str) -> bool:
        """Keep the tables of a file that does not parse, read from its tokens, if they name
        one write; its error says its columns are lost."""
        found = words_lineage(sql_file.text, sql_file.dialect, sql_file.default_target)
        if found is None:
            return False
        self.unparsed.add(sql_file.label)
        message += "; its tables are read from the names after FROM, JOIN and INTO, "
        self.errors.append(
            FileError(sql_file.label, message + "its columns are lost", found.kind, "columns")
        )
        self.results[sql_file.label] = FileLineage(found.target, found.kind, found.sources, None)
        return True

    def column_order(self, files: Sequence[SqlFile]) -> list[SqlFile]:
        """Files in dependency order; files caught in a cycle come last, in input order."""
        by_target = {r.target: label for label, r in self.results.items()}
        creators = {r.target: lb for lb, r in self.results.items() if not r.kind.startswith("in")}
        edges = [
            (by_target[s], label)
            for label, r in self.results.items()
            for s in r.sources
            if s in by_target and by_target[s] != label
        ]
        edges += [  # the file that creates a table comes before the files inserting into it
            (creators[r.target], label)
            for label, r in self.results.items()
            if r.kind.startswith("insert") and creators.get(r.target, label) != label
        ]
        dag = DAG(list(self.results), edges)
        try:
            order = dag.topological_order()
        except CycleError:
            order = list(self.results)  # the caller reports the cycle; still give lineage
        by_label = {f.label: f for f in files}
        return [by_label[label] for label in order]

    def column_level(self, sql_file: SqlFile) -> None:
        if sql_file.label in self.unparsed:
            return  # its error says its columns are lost
        table = self.results[sql_file.label]
        # An INSERT writes its target's columns by position when that schema is known.
        writes = (table.target,) if table.kind.startswith("insert") else ()
        schema = self._schema_for(table.sources + writes)
        stage = "columns-of-a-scan" if self.words else "columns"  # a scan checks no columns
        key = content_key(stage, self.keys[sql_file.label], json.dumps(schema, sort_keys=True))
        cached = self.cache.get(key) if self.cache else None
        if cached is not None:
            try:
                self._store(sql_file.label, FileLineage.from_dict(cached))
                return
            except (KeyError, TypeError, ValueError):
                pass  # a damaged entry is a miss: analyse again
        try:
            statement = self._statement(sql_file)
            columns = statement_columns(statement, schema)
            query = statement.query
            # Columns are checked in a project's own SQL; a scan of foreign SQL does not say them.
            unknown = () if query is None or self.words else unknown_columns(query, schema)
        except Exception as error:  # sqlglot's own errors too: one file never stops the rest
            # The table edges found above stay in the results: a user would rather see which
            # tables the file reads than nothing at all.
            message = failure_message(error, "columns")
            self.errors.append(FileError(sql_file.label, message, table.kind, "columns"))
            return
        partial = table.kind.startswith("insert") and bool(statement.target_columns)
        result = FileLineage(table.target, table.kind, table.sources, columns, partial, unknown)
        self._store(sql_file.label, result)
        if self.cache:
            self.cache.put(key, result.as_dict())

    def _store(self, label: str, result: FileLineage) -> None:
        added = self.added.get(result.target)
        if added and result.columns is not None:
            result = replace(result, columns=with_added(result.columns, added))
        self.results[label] = result
        schema = result.output_schema()
        if schema is not None:
            self.schemas[result.target] = schema

    def _schema_for(self, sources: tuple[str, ...]) -> dict[str, dict[str, str]]:
        known: dict[str, dict[str, str]] = {}
        for source in sources:
            if source in self.base_schema:
                known[source] = dict(self.base_schema[source])
            elif source in self.schemas:
                known[source] = self.schemas[source]
        return schema_subset(sources, known)


def with_added(
    columns: tuple[ColumnLineage, ...], added: Sequence[tuple[str, str, tuple[str, ...]]]
) -> tuple[ColumnLineage, ...]:
    """``columns`` and the ``added`` ones it lacks, each computed from the output columns
    named (their sources together).

    >>> found = with_added((ColumnLineage("ts", ("s.t.ts",), "direct", "timestamp"),
    ...                     ColumnLineage("id", ("s.t.id",), "direct", "bigint")),
    ...                    [("valid_from", "timestamp", ("ts",)),
    ...                     ("valid_to", "timestamp", ("ts", "id"))])
    >>> [(c.column, c.sources, c.transform) for c in found[2:]]
    [('valid_from', ('s.t.ts',), 'expression'), ('valid_to', ('s.t.id', 's.t.ts'), 'expression')]
    """
    by_name = {c.column.lower(): c for c in columns}

    def sources(names: tuple[str, ...]) -> tuple[str, ...]:
        found = {s for n in names if n.lower() in by_name for s in by_name[n.lower()].sources}
        return tuple(sorted(found))

    extra = tuple(
        ColumnLineage(name, sources(of), "expression", kind)
        for name, kind, of in added
        if name.lower() not in by_name
    )
    return columns + extra


def failure_message(error: Exception, stage: str) -> str:
    """What to tell the user about ``error`` raised while analysing one file at ``stage``.

    >>> failure_message(SqlError("holds no SQL statement"), "statement")
    'holds no SQL statement'
    """
    if isinstance(error, SqlError):
        return str(error)
    if isinstance(error, RecursionError):
        # check_nesting keeps files far from the limit; this names the file if one gets there
        return "is nested too deeply to analyse: flatten deep subqueries or UNION chains with CTEs"
    detail = (str(error).splitlines() or [""])[0][:300]
    cause = f"{type(error).__name__}: {detail}".rstrip(": ")
    lost = "its column lineage" if stage == "columns" else "it"
    alias = re.fullmatch(r"Alias already used: (.*)", detail)
    if alias:
        name = alias.group(1)
        fix = (
            f"two tables or subqueries in one FROM clause are both named {name!r}: "
            "give each its own alias"
            if name
            else "two subqueries in one FROM clause have no alias: give each its own alias"
        )
    else:
        fix = (
            "check the SQL runs in its dialect; if it does, this is a gap in the lineage "
            "engine: report it with the file"
        )
    return f"{lost} could not be analysed ({cause}): {fix}"
