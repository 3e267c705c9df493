"""Find the SQL files of a project: ``sql/<layer>/<table>.sql`` and ``sql/alternates/...``.

The layer is the folder; a bare SELECT writes ``<layer>.<file stem>``. The authoring dialect is
the project's, overridden per file by ``datasets.yaml`` (``dialect:``) or by a first-line
comment ``-- dialect: redshift``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from medallion_assets.catalog.base import LAYERS
from medallion_assets.catalog.errors import CatalogIssue
from medallion_assets.lineage.analysis import SqlFile
from medallion_assets.lineage.merge_clauses import merge_spec
from medallion_assets.lineage.script import spark_preamble, spark_sql
from medallion_assets.lineage.semicolons import several_statements
from medallion_assets.lineage.statement import SqlError, parse_script, parse_statement

ALTERNATES = "alternates"
_DIALECT_COMMENT = re.compile(r"^\s*--\s*dialect\s*:\s*([A-Za-z0-9_]+)\s*$", re.MULTILINE)
_STEM = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass(frozen=True)
class ProjectSql:
    primary: tuple[tuple[str, SqlFile], ...]  # (layer, file) for every sql/<layer>/*.sql
    alternates: Mapping[str, SqlFile]  # by path relative to sql/, e.g. "alternates/silver/x.sql"


def discover_sql(
    root: Path, project_dialect: str, dialects: Mapping[str, str]
) -> tuple[ProjectSql, list[CatalogIssue]]:
    """``dialects`` maps table names to a per-table authoring dialect from datasets.yaml."""
    folder = root / "sql"
    issues: list[CatalogIssue] = []
    primary: list[tuple[str, SqlFile]] = []
    alternates: dict[str, SqlFile] = {}
    if not folder.is_dir():
        return ProjectSql((), {}), [
            CatalogIssue(
                "sql/",
                "",
                "the sql folder is missing",
                "create sql/bronze, sql/silver, sql/gold with one .sql file per table",
            )
        ]
    inside = root.resolve()
    for path in sorted(folder.rglob("*")):
        if path.name.startswith("."):
            continue
        relative = path.relative_to(folder)
        label = f"sql/{relative.as_posix()}"
        if path.is_symlink() and not path.resolve().is_relative_to(inside):
            # Loaded, it would be a table whose SQL lives elsewhere and changes unseen.
            issues.append(
                CatalogIssue(
                    label,
                    "",
                    f"a link to {path.resolve()}, outside the project",
                    "copy it into the project, or remove the link",
                )
            )
            continue
        if path.is_dir():
            continue
        top = relative.parts[0]
        if path.suffix != ".sql":
            issues.append(
                CatalogIssue(
                    label,
                    "",
                    "not a .sql file in the sql folder",
                    "move it out of sql/ or rename it to .sql",
                )
            )
            continue
        if top == ALTERNATES:
            layer = relative.parts[1] if len(relative.parts) > 2 else ""
            sql_file, issue = _read(path, label, layer, project_dialect, dialects)
        elif top in LAYERS and len(relative.parts) == 2:
            sql_file, issue = _read(path, label, top, project_dialect, dialects)
        else:
            issues.append(_misplaced(label))
            continue
        if issue is not None:
            issues.append(issue)
            continue
        assert sql_file is not None
        for spark_issue in (preamble_issue(sql_file), merge_issue(sql_file)):
            if spark_issue is not None:
                issues.append(spark_issue)
        if top == ALTERNATES:
            alternates[relative.as_posix()] = sql_file
        else:
            primary.append((top, sql_file))
    return ProjectSql(tuple(primary), alternates), issues


def preamble_issue(sql_file: SqlFile) -> CatalogIssue | None:
    """A preamble Spark cannot run (a JavaScript function, an untyped parameter), named at load
    rather than when the table builds."""
    if not several_statements(sql_file.text):  # only a script can hold a preamble
        return None
    try:
        script, _ = parse_script(
            sql_file.text, sql_file.dialect, sql_file.default_target, inline=False
        )
    except SqlError:
        return None  # the lineage analysis reports it, once
    try:
        for statement in spark_preamble(script, sql_file.dialect):
            spark_sql(statement)
    except SqlError as error:
        return CatalogIssue(
            sql_file.label,
            "sql",
            f"the file {error}",
            "the statements before the write run on Spark before it: keep to what Spark SQL "
            "runs (SQL functions, temporary views, DECLARE/SET of variables)",
        )
    return None


_MERGE = re.compile(r"\bmerge\b", re.IGNORECASE)


def merge_issue(sql_file: SqlFile) -> CatalogIssue | None:
    """A MERGE whose clauses cannot run (an INSERT with more values than columns, a clause
    Spark has no action for), named at load rather than when the table builds."""
    if not _MERGE.search(sql_file.text):
        return None
    try:
        statement = parse_statement(sql_file.text, sql_file.dialect, sql_file.default_target)
    except SqlError:
        return None  # the lineage analysis reports it, once
    if statement.kind != "merge":
        return None
    try:
        merge_spec(statement.expression)
    except SqlError as error:
        return CatalogIssue(sql_file.label, "sql", str(error), "correct the MERGE statement")
    return None


def _misplaced(label: str) -> CatalogIssue:
    return CatalogIssue(
        label,
        "",
        "SQL file outside a layer folder",
        f"move it to sql/<layer>/<table>.sql with layer one of {', '.join(LAYERS)}, "
        "or to sql/alternates/<layer>/ for an alternate producer",
    )


def _read(
    path: Path, label: str, layer: str, project_dialect: str, dialects: Mapping[str, str]
) -> tuple[SqlFile | None, CatalogIssue | None]:
    stem = path.stem
    if not _STEM.match(stem):
        return None, CatalogIssue(
            label,
            "",
            f"file name {stem!r} is not a safe table name",
            "use lower-case letters, digits and _ (the file stem becomes the table name)",
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        return None, CatalogIssue(label, "", f"not UTF-8 text: {error}", "save the file as UTF-8")
    # An alternate's bare SELECT is checked against its dataset by the loader, not by this name.
    table = f"{layer}.{stem}" if layer in LAYERS else f"alternate.{stem}"
    dialect = project_dialect
    if table and table in dialects:
        dialect = dialects[table]
    header = _DIALECT_COMMENT.search(text[:500])
    if header:
        dialect = header.group(1).lower()
    return SqlFile(label, text, dialect, table), None
