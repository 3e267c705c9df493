"""A table's ``kind`` (datasets.yaml) against its SQL: whether ``append``, ``merge`` or ``scd2``
can be honoured (``lineage.incremental``, from the SQL's lineage), and what the runtime then reads
incrementally. A kind the SQL cannot honour is a catalog issue naming the SQL file's line (or
datasets.yaml's) and what to change, found before any Spark starts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlglot import exp

from medallion_assets.catalog import models
from medallion_assets.catalog.errors import CatalogIssue
from medallion_assets.catalog.metadata_files import LoadedFile
from medallion_assets.lineage.analysis import SqlFile
from medallion_assets.lineage.file_lineage import FileLineage
from medallion_assets.lineage.incremental import Incremental, NotIncremental, incremental
from medallion_assets.lineage.statement import SqlError, parse_script


def incremental_of(
    files: Mapping[str, LoadedFile],
    name: str,
    settings: models.DatasetSettings,
    all_settings: Mapping[str, models.DatasetSettings],
    sql_file: SqlFile,
    tables: Mapping[str, tuple[SqlFile, FileLineage]],
) -> tuple[Incremental | None, list[CatalogIssue]]:
    """``name``'s incremental reading, or None (kind full), and the issues that refuse it."""
    if settings.kind == "full":
        return None, []

    def refuse(message: str, fix: str, field: str = "kind") -> list[CatalogIssue]:
        loaded = files.get("datasets")
        document = loaded.document if loaded is not None else None
        text = f"kind {settings.kind} of {name}: {message}"
        if document is None:
            return [CatalogIssue("metadata/datasets.yaml", f"datasets.{name}.{field}", text, fix)]
        return [document.issue(("datasets", name, field), text, fix)]

    if name.startswith("bronze."):
        return None, refuse(
            "bronze tables already take only the raw objects that are new", "remove kind"
        )
    try:
        _, statement = parse_script(sql_file.text, sql_file.dialect, name)
    except SqlError:
        return None, []  # the file's own error is reported where it is analysed
    schema = {
        upstream: dict(found)
        for upstream in statement.sources
        if upstream in tables and (found := tables[upstream][1].output_schema()) is not None
    }
    try:
        plan = incremental(statement, settings.kind, settings.keys, settings.driving, schema)
    except NotIncremental as error:
        issue = CatalogIssue(sql_file.label, "", f"{name}: {error.reason}", "", error.line)
        return None, [issue]
    driving = all_settings.get(plan.driving)
    if driving is not None and driving.partitions is not None and settings.partitions is None:
        return None, refuse(
            f"its driving input {plan.driving} is partitioned daily, and {name} is not",
            f"give {name} daily partitions too (each day is then built alone), or use kind full",
        )
    if settings.kind == "scd2":
        query = statement.query
        names = query.named_selects if isinstance(query, exp.Query) else None
        problem = history_issue(settings, names)
        if problem is not None:
            return None, refuse(*problem)
    return plan, []


def history_issue(
    settings: models.DatasetSettings, columns: Sequence[str] | None
) -> tuple[str, str, str] | None:
    """(what is wrong, the fix, the datasets.yaml field) when an scd2 table's ``updated_at``
    and ``track`` are not its output's columns (``columns``: the SQL's output, None when
    unknown), or its output already has a column the history adds.

    >>> settings = models.DatasetSettings(kind="scd2", keys=["id"], updated_at="ts")
    >>> history_issue(settings, ["id", "v", "ts"]) is None
    True
    >>> history_issue(settings, ["id", "v", "ts", "is_current"])[0]
    "its SQL's output has is_current, which the history adds"
    """
    if not columns or "*" in columns:
        return None
    names = {c.lower() for c in columns}
    listed = ", ".join(columns)
    updated_at = (settings.updated_at or "").lower()
    if updated_at not in names:
        return (
            f"updated_at {settings.updated_at} is not a column of its SQL's output ({listed})",
            "name the output column that says when each version began",
            "updated_at",
        )
    wrong = [c for c in settings.track if c.lower() not in names]
    if wrong:
        return (
            f"track {', '.join(wrong)}: not a column of its SQL's output ({listed})",
            "list output columns whose change opens a new version",
            "track",
        )
    both = [c for c in settings.track if c.lower() in {k.lower() for k in settings.keys}]
    if updated_at in {k.lower() for k in settings.keys} or both:
        return (
            f"{', '.join(both) or settings.updated_at} is a key: a key identifies the row, it "
            "does not change",
            "take it out of keys, or out of track and updated_at",
            "keys",
        )
    taken = [c for c in HISTORY_COLUMNS if c in names]
    if taken:
        return (
            f"its SQL's output has {', '.join(taken)}, which the history adds",
            "rename that output column",
            "kind",
        )
    return None


# What an scd2 table adds to its SQL's columns: when each version began and ended, and
# whether it is the key's current one.
HISTORY_COLUMNS = {"valid_from": "timestamp", "valid_to": "timestamp", "is_current": "boolean"}


def history_columns(settings: models.DatasetSettings) -> list[tuple[str, str, tuple[str, ...]]]:
    """(name, type, the output columns it is computed from) of each history column of an scd2
    table, for its lineage: valid_from is a version's updated_at; valid_to and is_current come
    from the key's next version, so from the keys too.

    >>> history_columns(models.DatasetSettings(kind="scd2", keys=["id"], updated_at="ts"))[1]
    ('valid_to', 'timestamp', ('ts', 'id'))
    """
    updated_at = settings.updated_at or ""
    return [
        (column, kind, (updated_at,) if column == "valid_from" else (updated_at, *settings.keys))
        for column, kind in HISTORY_COLUMNS.items()
    ]
