"""``load_catalog(path)``: metadata + SQL -> one immutable ``Catalog``, or every problem at once.

>>> catalog = load_catalog("path/to/project")          # doctest: +SKIP
>>> catalog.datasets["silver.orders_usd"].upstream     # doctest: +SKIP
('bronze.fx_rates', 'bronze.orders')
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from medallion_assets.catalog import models, operations
from medallion_assets.catalog import sources as source_models
from medallion_assets.catalog.base import MAX_NAME_LENGTH, check_table_name
from medallion_assets.catalog.catalog import INGESTION_COLUMNS, Catalog, Dataset
from medallion_assets.catalog.datasets import build_datasets
from medallion_assets.catalog.dependencies import (
    build_graph,
    check_dependency_issues,
    check_recovery_cycles,
)
from medallion_assets.catalog.errors import CatalogError, CatalogIssue
from medallion_assets.catalog.kinds import history_columns
from medallion_assets.catalog.known import KnownNames
from medallion_assets.catalog.layers import layer_problems
from medallion_assets.catalog.metadata_files import LoadedFile, load_metadata, model_of
from medallion_assets.catalog.null_keys import null_keys_issues
from medallion_assets.catalog.references import ReferenceChecker
from medallion_assets.catalog.sql_files import ProjectSql, discover_sql
from medallion_assets.lineage.analysis import Analysis, SqlFile, analyze
from medallion_assets.lineage.cache import LineageCache
from medallion_assets.lineage.dag import DAG, CycleError
from medallion_assets.lineage.file_lineage import FileLineage

CACHE_DIR = Path(".medallion") / "cache"


def load_catalog(root: Path | str = ".", *, use_cache: bool = True) -> Catalog:
    """Load and check a project; raise ``CatalogError`` listing every problem found."""
    root = Path(root)
    try:
        return _load(root, use_cache)
    except RecursionError:
        # Each SQL and YAML file is guarded where it is read, and named there; this is the
        # backstop for a nesting none of those guards foresaw.
        issue = CatalogIssue(
            "sql/",
            "",
            "loading the project went deeper than Python's recursion limit",
            "a SQL file is nested too deeply: flatten deep subqueries or long UNION chains "
            "into CTEs",
        )
        raise CatalogError(root, [issue]) from None


def _load(root: Path, use_cache: bool) -> Catalog:
    files, issues = load_metadata(root)
    project = model_of(files, "project", models.ProjectFile) or models.ProjectFile(name=root.name)
    datasets_file = model_of(files, "datasets", models.DatasetsFile)
    dialects = {
        name: s.dialect
        for name, s in (datasets_file.datasets if datasets_file else {}).items()
        if s.dialect
    }
    sql, sql_issues = discover_sql(root, project.dialect, dialects)
    issues.extend(sql_issues)
    sources_file = model_of(files, "sources", source_models.SourcesFile)
    sources = sources_file.sources if sources_file else {}
    base_schema = {f"raw.{name}": _raw_schema(source) for name, source in sources.items()}

    cache = LineageCache(root / CACHE_DIR) if use_cache else None
    added = {  # an scd2 table's history columns, for the files that read it
        name: history_columns(s)
        for name, s in (datasets_file.datasets if datasets_file else {}).items()
        if s.kind == "scd2"
    }
    primary = analyze(
        [f for _, f in sql.primary], base_schema, cache=cache, save_cache=False, added=added
    )
    tables, table_issues = _tables(sql, primary, sources, sources_file is not None)
    issues.extend(table_issues)
    issues.extend(_duplicate_columns(tables))
    derived = {t: fl.output_schema() for t, (_, fl) in tables.items()}
    alternates = analyze(
        list(sql.alternates.values()),
        {**base_schema, **{t: s for t, s in derived.items() if s is not None}},
        cache=cache,
        save_cache=False,
    )
    if cache is not None:
        cache.save()  # once, after both analyses: a save keeps only the entries used so far
    issues.extend(
        CatalogIssue(e.file, "sql", e.message, sql_fix(e.message)) for e in alternates.errors
    )

    known = KnownNames(
        datasets={t: (tuple(s) if s is not None else None) for t, s in derived.items()},
        types={t: s for t, s in derived.items() if s is not None},
        sources={name: tuple(c.name for c in s.columns) for name, s in sources.items()},
        sources_loaded=sources_file is not None,
    )
    issues.extend(ReferenceChecker(files, known).check_all())
    datasets, dataset_issues = build_datasets(files, project, tables, sql, alternates, known)
    issues.extend(dataset_issues)
    if not issues:
        issues.extend(check_dependency_issues(datasets))
        issues.extend(check_recovery_cycles(datasets))
        issues.extend(null_keys_issues(files, datasets, sources))
    if issues:
        raise CatalogError(root, _unique(issues))
    return _assemble(root, files, project, datasets)


def _raw_schema(source: source_models.Source) -> dict[str, str]:
    schema = {c.name: c.type for c in source.columns}
    schema.update(INGESTION_COLUMNS)
    return schema


def _tables(
    sql: ProjectSql,
    analysis: Analysis,
    sources: dict[str, source_models.Source],
    sources_loaded: bool,
) -> tuple[dict[str, tuple[SqlFile, FileLineage]], list[CatalogIssue]]:
    """Dataset name -> (file, lineage); issues for SQL errors, misnamed targets, duplicates,
    unknown tables and cycles."""
    issues = [CatalogIssue(e.file, "sql", e.message, sql_fix(e.message)) for e in analysis.errors]
    tables: dict[str, tuple[SqlFile, FileLineage]] = {}
    for layer, sql_file in sql.primary:
        lineage = analysis.lineage.get(sql_file.label)
        if lineage is None:
            continue
        issues.extend(
            CatalogIssue(sql_file.label, "sql", u.message(), u.fix(), u.line)
            for u in lineage.unknown
        )
        if lineage.target.split(".")[0] != layer or lineage.target.count(".") != 1:
            issues.append(
                CatalogIssue(
                    sql_file.label,
                    "target",
                    f"the statement writes {lineage.target!r}, "
                    f"but the file is in the {layer} folder",
                    f"write to '{layer}.<table>' or move the file to the target's layer folder",
                )
            )
            continue
        try:
            check_table_name(lineage.target)
        except ValueError:
            safe = re.sub(r"[^a-z0-9_.]", "_", lineage.target.lower())[:140]
            issues.append(
                CatalogIssue(
                    sql_file.label,
                    "target",
                    f"the statement writes {lineage.target[:140]!r}, which is not a safe table "
                    "name: it becomes a Dagster asset key and a Spark table, which take "
                    f"lower-case letters, digits and _ (at most {MAX_NAME_LENGTH} per part)",
                    f"rename the target, e.g. {safe!r}",
                )
            )
            continue
        if lineage.target in tables:
            other = tables[lineage.target][0].label
            issues.append(
                CatalogIssue(
                    sql_file.label,
                    "target",
                    f"table {lineage.target!r} is also produced by {other}",
                    "one table has one SQL file: remove or rename one of them "
                    "(alternate producers go in sql/alternates/ and datasets.yaml)",
                )
            )
            continue
        tables[lineage.target] = (sql_file, lineage)
    raw = {f"raw.{name}" for name in sources}
    for name, (sql_file, lineage) in tables.items():
        for source in lineage.sources:
            if source.startswith("raw.") and not sources_loaded:
                continue  # sources.yaml did not validate: its own problems are said instead
            if source not in tables and source not in raw:
                issue = _unknown_table(sql_file.label, source, tables, raw)
                issues.append(replace(issue, line=line_naming(sql_file.text, source)))
        issues.extend(
            CatalogIssue(sql_file.label, "sql", f"{name} {message}", fix)
            for message, fix in layer_problems(name, lineage.sources)
        )
    dag = DAG(
        list(tables), [(s, t) for t, (_, fl) in tables.items() for s in fl.sources if s in tables]
    )
    try:
        dag.levels()
    except CycleError as error:
        files = [tables[str(n)][0].label for n in error.cycle[:-1]]
        issues.append(
            CatalogIssue(
                files[0],
                "sql",
                f"{error}; files: {', '.join(files)}",
                "break the cycle: a table cannot read, directly or indirectly, what it produces",
            )
        )
    return tables, issues


def sql_fix(message: str) -> str:
    """What to do about a SQL file the analysis refused; most messages say it themselves.

    >>> sql_fix("holds no SQL statement")
    'write one query (SELECT ...) or one write (CREATE TABLE, INSERT, MERGE), or remove the file'
    """
    if "holds no SQL statement" in message:
        return (
            "write one query (SELECT ...) or one write (CREATE TABLE, INSERT, MERGE), or "
            "remove the file"
        )
    if "does not parse" in message:
        return (
            "correct the SQL where the message points; if it is another dialect, say so in a "
            "first line `-- dialect: <name>` or in project.yaml's dialect:"
        )
    if ": use " in message or "; " in message:
        return ""  # the message says what to write instead
    return "correct the SQL as the message says (docs/project.md lists what a file may hold)"


def _duplicate_columns(tables: Mapping[str, tuple[SqlFile, FileLineage]]) -> list[CatalogIssue]:
    """Spark refuses to write two columns of one name (compared case-insensitively)."""
    issues = []
    for sql_file, lineage in tables.values():
        names = [c.column.lower() for c in lineage.columns or () if c.column != "*"]
        for name in sorted({n for n in names if names.count(n) > 1}):
            issues.append(
                CatalogIssue(
                    sql_file.label,
                    "sql",
                    f"the query yields column {name!r} {names.count(name)} times; Spark cannot "
                    "write a table with two columns of one name (names ignore case)",
                    f"give all but one of them another name: ... AS {name}_2",
                )
            )
    return issues


def line_naming(text: str, table: str) -> int | None:
    """The line of ``text`` where it first names ``table`` (any quoting, any case), if any.

    >>> line_naming("SELECT *" + chr(10) + "FROM `silver`.`Orders` o", "silver.orders")
    2
    >>> line_naming("SELECT * FROM silver.orders_x", "silver.orders") is None
    True
    """
    quote = '[`"\\[\\]]?'
    parts = [quote + re.escape(p) + quote for p in table.split(".")]
    found = re.search(r"(?<![\w.])" + r"\s*\.\s*".join(parts) + r"(?![\w])", text, re.I)
    return text.count("\n", 0, found.start()) + 1 if found else None


def _unknown_table(
    label: str, name: str, tables: Mapping[str, object], raw: set[str]
) -> CatalogIssue:
    if name.startswith("raw."):
        fix = f"register source {name[4:]!r} in metadata/sources.yaml"
    else:
        fix = "add sql/<layer>/<table>.sql for it, or reference a table that exists"
    close = difflib.get_close_matches(name, [*tables, *raw], n=1)
    if close:
        fix = f"did you mean '{close[0]}'? otherwise {fix}"
    return CatalogIssue(label, "sql", f"reads unknown table {name!r}", fix)


def _unique(issues: list[CatalogIssue]) -> list[CatalogIssue]:
    return list(dict.fromkeys(issues))


def _assemble(
    root: Path,
    files: dict[str, LoadedFile],
    project: models.ProjectFile,
    datasets: Mapping[str, Dataset],
) -> Catalog:
    systems = model_of(files, "systems", models.SystemsFile)
    sources = model_of(files, "sources", source_models.SourcesFile)
    targets = model_of(files, "targets", models.TargetsFile)
    validation = model_of(files, "validation", models.ValidationFile)
    policies = model_of(files, "policies", operations.PoliciesFile)
    control = model_of(files, "control", operations.ControlFile)
    pipelines = model_of(files, "pipelines", operations.PipelinesFile)
    exposures = model_of(files, "exposures", models.ExposuresFile)
    # Reached only without issues, so every file validated (or took its empty default).
    assert systems and sources and targets and validation and policies and control
    assert pipelines and exposures
    graph = build_graph(sources.sources, datasets, exposures.exposures)
    order = graph.dag.subgraph(list(datasets)).topological_order()
    return Catalog(
        root=root,
        project=project,
        systems=systems.systems,
        sources=sources.sources,
        datasets={name: datasets[name] for name in order},
        targets={t.table: t for t in targets.targets},
        rule_sets=validation.rule_sets,
        retry_policies=policies.retry_policies,
        default_retry_policy=policies.default_retry_policy,
        healing_rules=policies.healing_rules,
        control_flags=control.flags,
        profiles=model_of(files, "profiles", operations.ProfilesFile),
        pipelines={p.id: p for p in pipelines.pipelines},
        exposures={e.name: e for e in exposures.exposures},
        lineage=graph,
    )
