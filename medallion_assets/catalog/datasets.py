"""Turn analysed SQL plus ``datasets.yaml`` into ``Dataset`` objects and the lineage graph."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from sqlglot import exp

from medallion_assets.catalog import models
from medallion_assets.catalog import sources as source_models
from medallion_assets.catalog.catalog import AlternateProducer, Dataset
from medallion_assets.catalog.dependencies import _layer_rank
from medallion_assets.catalog.errors import CatalogIssue
from medallion_assets.catalog.kinds import incremental_of
from medallion_assets.catalog.known import KnownNames
from medallion_assets.catalog.layers import layer_problems
from medallion_assets.catalog.metadata_files import LoadedFile, model_of
from medallion_assets.catalog.rules import Rule
from medallion_assets.catalog.sql_files import ProjectSql
from medallion_assets.lineage.analysis import Analysis, SqlFile
from medallion_assets.lineage.file_lineage import FileLineage


def code_version(*parts: str) -> str:
    """Short content hash: changes when the SQL or any metadata of the dataset changes."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _json(value: object) -> str:
    dump = getattr(value, "model_dump", None)
    return json.dumps(dump(mode="json") if dump else value, sort_keys=True, default=str)


def build_datasets(
    files: Mapping[str, LoadedFile],
    project: models.ProjectFile,
    tables: Mapping[str, tuple[SqlFile, FileLineage]],
    sql: ProjectSql,
    alternates: Analysis,
    known: KnownNames,
) -> tuple[dict[str, Dataset], list[CatalogIssue]]:
    settings_file = model_of(files, "datasets", models.DatasetsFile)
    targets_file = model_of(files, "targets", models.TargetsFile)
    validation = model_of(files, "validation", models.ValidationFile)
    sources_file = model_of(files, "sources", source_models.SourcesFile)
    all_settings = settings_file.datasets if settings_file else {}
    targets = {t.table: t for t in targets_file.targets} if targets_file else {}
    rule_sets = validation.rule_sets if validation else {}
    sources = sources_file.sources if sources_file else {}
    issues: list[CatalogIssue] = []
    datasets: dict[str, Dataset] = {}
    used_alternates: set[str] = set()
    for name, (sql_file, lineage) in tables.items():
        refused = _kind_issue(sql_file.label, lineage.kind)
        if refused is not None:
            issues.append(refused)
            continue
        settings = all_settings.get(name, models.DatasetSettings())
        rules = _rules(settings, rule_sets)
        target = targets.get(name)
        alts, alt_issues = _alternates(name, settings, sql, alternates, known, tables)
        backups, backup_issues = _backups(name, settings, sql_file.dialect, known)
        issues.extend(alt_issues + backup_issues)
        issues.extend(_daily_source_issues(files, name, settings, lineage, sources))
        issues.extend(_keep_latest_issues(files, name, settings, lineage))
        plan, kind_issues = incremental_of(files, name, settings, all_settings, sql_file, tables)
        issues.extend(kind_issues)
        used_alternates.update(a.sql_path for a in alts)
        datasets[name] = Dataset(
            name=name,
            layer=name.split(".")[0],
            sql_path=sql_file.label,
            sql=sql_file.text,
            dialect=sql_file.dialect,
            statement_kind=lineage.kind,
            upstream=lineage.sources,
            columns=lineage.columns or (),
            settings=settings,
            criticality=settings.criticality or project.default_criticality,
            owners=settings.owners or project.owners,
            rules=rules,
            system=_system(name, lineage, target, sources, project),
            target=target,
            alternates=(*alts, *backups),
            code_version=code_version(
                sql_file.text,
                sql_file.dialect,
                _json(settings),
                _json(target),
                json.dumps([_json(r) for r in rules]),
            ),
            incremental=plan,
        )
    for path, sql_file in sql.alternates.items():
        if settings_file is None:
            break  # datasets.yaml did not load: its own error is reported, not this echo of it
        if f"sql/{path}" not in used_alternates:
            issues.append(
                CatalogIssue(
                    sql_file.label,
                    "",
                    "alternate producer is not used by any dataset",
                    "reference it from datasets.yaml: alternates: [{name: ..., sql: " + path + "}]",
                )
            )
    return datasets, issues


def _daily_source_issues(
    files: Mapping[str, LoadedFile],
    name: str,
    settings: models.DatasetSettings,
    lineage: FileLineage,
    sources: Mapping[str, source_models.Source],
) -> list[CatalogIssue]:
    """A daily bronze table finds its days in its source's partition folders: a source without
    a ``partition:`` pattern has none, and the table would never run."""
    if settings.partitions is None or not name.startswith("bronze."):
        return []
    issues = []
    for upstream in lineage.sources:
        source = sources.get(upstream.removeprefix("raw."))
        if upstream.startswith("raw.") and source is not None and source.partition is None:
            loc = ("datasets", name, "partitions")
            message = (
                f"{name} is partitioned daily, but its source {upstream} has no partition "
                "pattern, so no day would ever be found to run"
            )
            fix = (
                f"give source {upstream.removeprefix('raw.')!r} a partition pattern in "
                "sources.yaml (e.g. partition: 'dt={date}'), or remove 'partitions:'"
            )
            loaded = files.get("datasets")
            document = loaded.document if loaded is not None else None
            issues.append(
                document.issue(loc, message, fix)
                if document is not None
                else CatalogIssue("metadata/datasets.yaml", "datasets", message, fix)
            )
    return issues


def _keep_latest_issues(
    files: Mapping[str, LoadedFile],
    name: str,
    settings: models.DatasetSettings,
    lineage: FileLineage,
) -> list[CatalogIssue]:
    """``keep_latest_by`` chooses between a MERGE's source rows: on any other file it would
    be ignored, so it is refused."""
    if not settings.keep_latest_by or lineage.kind == "merge":
        return []
    message = f"keep_latest_by applies to a MERGE INTO file, and {name}'s file is a {lineage.kind}"
    fix = "remove keep_latest_by, or write the table's file as MERGE INTO ... USING ... ON ..."
    loaded = files.get("datasets")
    document = loaded.document if loaded is not None else None
    loc = ("datasets", name, "keep_latest_by")
    if document is None:
        return [CatalogIssue("metadata/datasets.yaml", "datasets", message, fix)]
    return [document.issue(loc, message, fix)]


def _rules(
    settings: models.DatasetSettings, rule_sets: Mapping[str, tuple[Rule, ...]]
) -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for set_name in settings.checks:
        rules.extend(rule_sets.get(set_name, ()))
    rules.extend(settings.rules)
    return tuple(rules)


def _system(
    name: str,
    lineage: FileLineage,
    target: models.Target | None,
    sources: Mapping[str, source_models.Source],
    project: models.ProjectFile,
) -> str:
    """The system whose throttle governs this dataset's job."""
    if name.startswith("bronze."):
        for upstream in lineage.sources:
            source = sources.get(upstream.removeprefix("raw."))
            if upstream.startswith("raw.") and source is not None:
                return source.system
    if target is not None:
        return target.system
    return project.compute_system


def _alternates(
    name: str,
    settings: models.DatasetSettings,
    sql: ProjectSql,
    analysis: Analysis,
    known: KnownNames,
    tables: Mapping[str, tuple[SqlFile, FileLineage]],
) -> tuple[list[AlternateProducer], list[CatalogIssue]]:
    issues: list[CatalogIssue] = []
    result: list[AlternateProducer] = []
    label = "metadata/datasets.yaml"
    for i, alternate in enumerate(settings.alternates):
        field = f"datasets.{name}.alternates[{i}].sql"
        sql_file = sql.alternates.get(alternate.sql)
        if sql_file is None:
            issues.append(
                CatalogIssue(
                    label,
                    field,
                    f"alternate SQL {alternate.sql!r} does not exist",
                    "put the file under sql/alternates/<layer>/ and give its path relative to sql/",
                )
            )
            continue
        lineage = analysis.lineage.get(sql_file.label)
        if lineage is None:
            continue  # its SQL error is reported already
        refused = _kind_issue(sql_file.label, lineage.kind)
        if refused is not None:
            issues.append(refused)
        elif lineage.kind != "select" and lineage.target != name:
            issues.append(
                CatalogIssue(
                    sql_file.label,
                    "target",
                    f"writes {lineage.target!r} but is an alternate for {name!r}",
                    f"write to {name} or use a bare SELECT",
                )
            )
        raw = {f"raw.{s}" for s in known.sources}
        for upstream in lineage.sources:
            if upstream.startswith("raw.") and not known.sources_loaded:
                continue
            if upstream == name or (upstream not in tables and upstream not in raw):
                issues.append(
                    CatalogIssue(
                        sql_file.label,
                        "sql",
                        f"alternate for {name} reads unknown table {upstream!r}",
                        "read registered sources or project tables",
                    )
                )
        issues.extend(
            CatalogIssue(sql_file.label, "sql", f"alternate for {name} {message}", fix)
            for message, fix in layer_problems(name, lineage.sources)
        )
        primary = known.datasets.get(name)
        mine = lineage.output_schema()
        if primary is not None and mine is not None and set(primary) != set(mine):
            missing = sorted(set(primary) - set(mine))
            extra = sorted(set(mine) - set(primary))
            issues.append(
                CatalogIssue(
                    sql_file.label,
                    "sql",
                    f"alternate for {name} yields other columns than the primary "
                    f"(missing: {', '.join(missing) or '-'}; extra: {', '.join(extra) or '-'})",
                    "an alternate must produce exactly the primary's columns",
                )
            )
        result.append(
            AlternateProducer(
                alternate.name,
                sql_file.label,
                sql_file.text,
                sql_file.dialect,
                lineage.sources,
                alternate.cost,
            )
        )
    return result, issues


def _backups(
    name: str, settings: models.DatasetSettings, dialect: str, known: KnownNames
) -> tuple[list[AlternateProducer], list[CatalogIssue]]:
    """Each declared backup as a producer reading the backup table's columns as they are."""
    issues: list[CatalogIssue] = []
    result: list[AlternateProducer] = []
    label = "metadata/datasets.yaml"
    taken = {a.name for a in settings.alternates}
    for i, backup in enumerate(settings.backups):
        field = f"datasets.{name}.backups[{i}]"

        def problem(message: str, fix: str, where: str = field) -> None:
            issues.append(CatalogIssue(label, where, f"backup of {name}: {message}", fix))

        if backup.table == name or backup.table not in known.datasets:
            close = [t for t in known.datasets if t != name]
            problem(
                f"{backup.table!r} is not another table of this project",
                f"name a project table holding a copy of {name} (e.g. one of "
                f"{', '.join(close[:3])})",
                f"{field}.table",
            )
            continue
        if _layer_rank(backup.table) > _layer_rank(name):
            problem(
                f"{backup.table} is in a later layer than {name}",
                "keep a backup in the same layer or an earlier one",
                f"{field}.table",
            )
        mine, theirs = known.datasets.get(name), known.datasets[backup.table]
        if mine is not None and theirs is not None and set(mine) != set(theirs):
            missing = sorted(set(mine) - set(theirs))
            extra = sorted(set(theirs) - set(mine))
            problem(
                f"{backup.table} has other columns (missing: {', '.join(missing) or '-'}; "
                f"extra: {', '.join(extra) or '-'})",
                "a backup must hold exactly the table's columns; write an alternate producer "
                "(sql/alternates/) to transform another table",
                f"{field}.table",
            )
            continue
        if backup.route_name in taken or backup.route_name == "primary":
            problem(
                f"the route name {backup.route_name!r} is taken",
                "give the backup a name of its own (name: ...)",
                f"{field}.name",
            )
            continue
        taken.add(backup.route_name)
        columns: list[exp.Expression] = [exp.column(c, quoted=True) for c in (mine or ())]
        columns = columns or [exp.Star()]
        query = exp.select(*columns).from_(exp.to_table(backup.table)).sql(dialect=dialect)
        result.append(
            AlternateProducer(
                backup.route_name,
                f"{label}#{field}",
                query,
                dialect,
                (backup.table,),
                backup.cost,
                "backup",
            )
        )
    return result, issues


# What a project's file may not be, though lineage reads it: (what it is, the fix).
_NOT_RUNNABLE = {
    "update": (
        "an UPDATE: a project's SQL file produces its table's rows, it does not change them "
        "in place",
        "write the SELECT that produces the table, or a MERGE INTO it for changed rows",
    ),
    "copy": (
        "a COPY or UNLOAD: a project's raw files are read by its sources, and its tables "
        "are loaded into the warehouse by its targets",
        "declare the files in metadata/sources.yaml (or the table in targets.yaml) and "
        "write the SELECT that produces the table",
    ),
    "clone": (
        "a CREATE TABLE ... CLONE: a project's SQL file produces its table's rows",
        "write SELECT * FROM the table to copy",
    ),
    "rename": (
        "an ALTER TABLE ... RENAME: a project's SQL file produces its table's rows",
        "write SELECT * FROM the table to take over, then drop the old file",
    ),
    "create_like": (
        "a CREATE TABLE ... LIKE, which makes an empty table: a project's SQL file "
        "produces its table's rows",
        "write the SELECT that produces the table",
    ),
}


def _kind_issue(label: str, kind: str) -> CatalogIssue | None:
    """Why a file of this statement kind cannot be a project's table, or None when it can."""
    if kind not in _NOT_RUNNABLE:
        return None
    what, fix = _NOT_RUNNABLE[kind]
    return CatalogIssue(label, "sql", f"is {what}", fix)
