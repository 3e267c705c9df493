"""A table's ``kind`` (datasets.yaml) against its SQL: whether ``append`` or ``merge`` can be
honoured (``lineage.incremental``, from the SQL's lineage), and what the runtime then reads
incrementally. A kind the SQL cannot honour is a catalog issue naming the SQL file's line (or
datasets.yaml's) and what to change, found before any Spark starts."""

from __future__ import annotations

from collections.abc import Mapping

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
    return plan, []
