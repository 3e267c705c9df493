"""Lineage of any folder of SQL files, outside a project: a bare SELECT writes its file stem.

A file may be a script, a procedure included: each of its writes is traced as its own part
(``load.sql#3``), see ``script_parts``.

>>> result = scan_directory(Path("queries"), dialect="duckdb")      # doctest: +SKIP
>>> result.as_dict()["edges"][:1]                                    # doctest: +SKIP
[{'from': 'lineitem', 'to': 'tpch_q01'}]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from medallion_assets.lineage.analysis import FileError, SqlFile, analyze
from medallion_assets.lineage.cache import LineageCache
from medallion_assets.lineage.dag import DAG, CycleError
from medallion_assets.lineage.dbt_jinja import Macros, Rendered
from medallion_assets.lineage.dbt_project import dbt_root, load_macros
from medallion_assets.lineage.file_lineage import ColumnLineage, FileLineage
from medallion_assets.lineage.graph import ColumnEdge
from medallion_assets.lineage.script_parts import script_parts


@dataclass(frozen=True)
class ScanResult:
    nodes: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    column_edges: tuple[ColumnEdge, ...]
    unresolved: tuple[dict[str, str], ...]
    errors: tuple[FileError, ...]
    files: Mapping[str, FileLineage]
    passed: tuple[str, ...] = ()  # files that move no data (comments, functions, DROP ...)
    # (file, why): files whose tables may not all be traced (a macro not expanded, ...)
    incomplete: tuple[tuple[str, str], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "nodes": [{"id": n} for n in self.nodes],
            "edges": [{"from": u, "to": d} for u, d in self.edges],
            "column_edges": [
                {"from": e.source, "to": e.target, "transform": e.transform}
                for e in self.column_edges
            ],
            "unresolved": list(self.unresolved),
            "errors": [
                {"file": e.file, "kind": e.kind, "stage": e.stage, "message": e.message}
                for e in self.errors
            ],
            "passed_over": list(self.passed),
            "incomplete": [{"file": f, "reason": r} for f, r in self.incomplete],
        }

    @property
    def cycles(self) -> tuple[FileError, ...]:
        return tuple(e for e in self.errors if e.stage == "cycle")


def scan_directory(
    directory: Path,
    dialect: str = "spark",
    *,
    columns: bool = True,
    schema: Mapping[str, Mapping[str, str]] | None = None,
    cache_dir: Path | None = None,
) -> ScanResult:
    """Scan every ``*.sql`` below ``directory``; a file that fails is reported, not fatal, and
    so is a cycle among the files' tables. In a dbt project (a ``dbt_project.yml`` in the
    folder or above it) models are rendered with its macros, and its macro, package and
    ``target`` folders are not models."""
    files = []
    read_errors = []
    project = dbt_root(directory)
    skipped = project.no_models if project is not None else ()
    for path in sorted(directory.rglob("*.sql")):
        if any(path.resolve().is_relative_to(folder.resolve()) for folder in skipped):
            continue
        label = str(path.relative_to(directory))
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            message = f"cannot be read as UTF-8 text: {error}"
            read_errors.append(FileError(label, message, stage="read"))
            continue
        files.append(SqlFile(label, text, dialect, path.stem.lower()))
    templated = any(_templated(f) for f in files)
    macros = load_macros(project, dialect) if templated else None
    return scan_files(
        files,
        columns=columns,
        schema=schema,
        cache_dir=cache_dir,
        read_errors=tuple(read_errors),
        macros=macros,
    )


def _templated(sql_file: SqlFile) -> bool:
    return any(mark in sql_file.text for mark in ("{{", "{%", "{#"))


def scan_files(
    files: list[SqlFile],
    *,
    columns: bool = True,
    schema: Mapping[str, Mapping[str, str]] | None = None,
    cache_dir: Path | None = None,
    read_errors: tuple[FileError, ...] = (),
    macros: Macros | None = None,
) -> ScanResult:
    cache = LineageCache(cache_dir) if cache_dir is not None else None
    parts: list[SqlFile] = []
    declared: dict[str, dict[str, str]] = {}
    schema_only: dict[str, FileLineage] = {}  # files that only declare tables
    unread: list[FileError] = []  # statements of scripts that could not be read
    passed: list[str] = []
    models: dict[str, Rendered] = {}  # dbt models: what Jinja recorded
    incomplete: list[tuple[str, str]] = []
    for sql_file in files:
        if _templated(sql_file):  # a dbt model: its SQL, as dbt renders it
            macros = macros or Macros(sql_file.dialect)
            model = macros.render(sql_file)
            models[sql_file.label] = model
            incomplete.extend((sql_file.label, why) for why in model.unexpanded)
            sql_file = model.file
        script = script_parts(sql_file)
        if script.moves_no_data:
            passed.append(sql_file.label)
        parts.extend(script.parts)
        unread.extend(script.errors)
        for table, table_columns in script.declared.items():
            declared.setdefault(table, table_columns)
            if not script.parts:
                label = sql_file.label if len(script.declared) == 1 else f"{sql_file.label}#{table}"
                schema_only[label] = _declared_table(table, table_columns, columns)
    known = {**declared, **(schema or {})}  # what the caller gives wins
    analysis = analyze(parts, known, columns=columns, cache=cache, words=True)
    errors = read_errors + tuple(unread) + analysis.errors
    lineage = {**schema_only, **analysis.lineage}
    for label, model in models.items():
        _add_dependencies(lineage, label, model)
    if macros is not None:
        incomplete.extend(macros.problems)
    result = build_result(lineage, errors, tuple(passed))
    return replace(result, incomplete=tuple(incomplete))


def _add_dependencies(lineage: dict[str, FileLineage], label: str, model: Rendered) -> None:
    """A dbt model's recorded ``ref``/``source`` tables join the tables its SQL reads (dbt's
    ``depends_on``: a ref in a set block, a comment or a macro's query counts); a model whose
    SQL could not be read at all is still a node with those inputs."""
    if not model.depends_on:
        return
    parts = [k for k in lineage if k == label or k.startswith(f"{label}#")]
    target = model.file.default_target or ""
    if not parts:
        reads = tuple(sorted(t for t in set(model.depends_on) if t != target))
        lineage[label] = FileLineage(target, "select", reads, None)
        return
    key = next((k for k in parts if lineage[k].target == target), parts[-1])
    found = lineage[key]
    added = {t for t in model.depends_on if t != found.target}
    lineage[key] = replace(found, sources=tuple(sorted(set(found.sources) | added)))


def _declared_table(table: str, columns: dict[str, str], with_columns: bool) -> FileLineage:
    """A table a file declares (``CREATE TABLE t (a INT)``): a node with its columns and no
    inputs."""
    declared = tuple(ColumnLineage(c, (), "declared", t) for c, t in columns.items())
    return FileLineage(table, "create_table", (), declared if with_columns else None)


def build_result(
    files: Mapping[str, FileLineage], errors: tuple[FileError, ...], passed: tuple[str, ...] = ()
) -> ScanResult:
    nodes: dict[str, None] = {}
    edges: dict[tuple[str, str], None] = {}
    column_edges: dict[tuple[str, str], str] = {}
    unresolved: list[dict[str, str]] = []
    for result in files.values():
        for source in result.sources:
            nodes.setdefault(source)
            edges.setdefault((source, result.target))
        nodes.setdefault(result.target)
        for column in result.columns or ():
            target = f"{result.target}.{column.column}"
            if column.unresolved:
                unresolved.append({"column": target, "reason": column.unresolved})
            for source in column.sources:
                column_edges.setdefault((source, target), column.transform)
    return ScanResult(
        tuple(nodes),
        tuple(edges),
        tuple(ColumnEdge(s, t, tr) for (s, t), tr in column_edges.items()),
        tuple(unresolved),
        errors + _cycle_errors(files),
        files,
        passed,
    )


def _cycle_errors(files: Mapping[str, FileLineage]) -> tuple[FileError, ...]:
    """One error per cycle among the files' tables, naming the cycle and the files in it.

    A file that reads its own target (``INSERT INTO t SELECT ... FROM t WHERE NOT EXISTS ...``,
    an incremental load) is not a cycle here: outside a project that is a common, valid pattern.
    Nor are the writes of one script that read one another in turn (``CREATE TABLE bak AS SELECT
    * FROM t; ...; INSERT INTO t SELECT * FROM bak``): its statements run in order.
    """
    writers: dict[str, list[str]] = {}
    for label, result in files.items():
        writers.setdefault(result.target, []).append(label)
    edges = [
        (source, result.target)
        for result in files.values()
        for source in result.sources
        if source in writers and source != result.target
    ]
    errors = []
    for cycle in DAG(list(writers), edges).cycles():
        labels = [label for table in cycle[:-1] for label in writers[table]]
        if len({label.rpartition("#")[0] or label for label in labels}) == 1:
            continue  # one script's statements, in the order they run
        named = CycleError(list[object](cycle))
        message = (
            f"{named}; files: {', '.join(labels)}; break the cycle: a table cannot read, "
            "directly or indirectly, what it produces"
        )
        errors.append(FileError(labels[0], message, files[labels[0]].kind, "cycle"))
    return tuple(errors)
