"""The loaded project: one immutable ``Catalog`` holding every model and the lineage graph."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from medallion_assets.catalog.models import DatasetSettings, Exposure, ProjectFile, System, Target
from medallion_assets.catalog.operations import (
    ControlFlag,
    HealingRule,
    Pipeline,
    ProfilesFile,
    RetryPolicy,
)
from medallion_assets.catalog.rules import Rule
from medallion_assets.catalog.sources import Source
from medallion_assets.lineage.file_lineage import ColumnLineage
from medallion_assets.lineage.graph import LineageGraph
from medallion_assets.lineage.incremental import Incremental

# Added by the runtime to every raw record, so bronze SQL can select them.
INGESTION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_ingested_at", "timestamp"),
    ("_source_file", "string"),
    ("_batch_id", "string"),
)


@dataclass(frozen=True)
class AlternateProducer:
    """Another SQL file producing the same table from other inputs, at a cost; or a backup
    (``kind == "backup"``): a copy of the table in another project table, read as it is."""

    name: str
    sql_path: str
    sql: str
    dialect: str
    upstream: tuple[str, ...]
    cost: float
    kind: str = "alternate"  # alternate | backup


@dataclass(frozen=True)
class Dataset:
    """One table of the project: its SQL, its lineage and its settings from metadata."""

    name: str  # "<layer>.<table>"
    layer: str
    sql_path: str
    sql: str
    dialect: str
    statement_kind: str
    upstream: tuple[str, ...]
    columns: tuple[ColumnLineage, ...]
    settings: DatasetSettings
    criticality: str
    owners: tuple[str, ...]
    rules: tuple[Rule, ...]
    system: str
    target: Target | None
    alternates: tuple[AlternateProducer, ...]
    code_version: str
    # kind append or merge (datasets.yaml), as the SQL's lineage allows it: what a run reads
    # incrementally; None for kind full
    incremental: Incremental | None = None

    @property
    def table(self) -> str:
        return self.name.split(".", 1)[1]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.column for c in self.columns if c.column != "*")

    @property
    def check_dependencies(self) -> tuple[str, ...]:
        """Other tables this table's checks read (referential integrity, SQL assertions).

        They are published before this table is checked, so a check never compares against a
        stale version of them.
        """
        tables = {t for rule in self.rules for t in rule.referenced_tables()}
        return tuple(sorted(tables - {self.name}))

    @property
    def pii_columns(self) -> tuple[str, ...]:
        return self.settings.pii_columns

    @property
    def tags(self) -> tuple[str, ...]:
        return self.settings.tags


@dataclass(frozen=True)
class Catalog:
    root: Path
    project: ProjectFile
    systems: Mapping[str, System]
    sources: Mapping[str, Source]  # by source name; the table is raw.<name>
    datasets: Mapping[str, Dataset]  # by "<layer>.<table>", in execution order
    targets: Mapping[str, Target]  # by dataset name
    rule_sets: Mapping[str, tuple[Rule, ...]]
    retry_policies: Mapping[str, RetryPolicy]
    default_retry_policy: str | None
    healing_rules: tuple[HealingRule, ...]
    control_flags: tuple[ControlFlag, ...]
    profiles: ProfilesFile | None
    pipelines: Mapping[str, Pipeline]
    exposures: Mapping[str, Exposure]
    lineage: LineageGraph

    def raw_sources(self, dataset: Dataset) -> tuple[tuple[str, Source], ...]:
        """The raw sources a bronze table reads, as (name, source); none for other layers."""
        if dataset.layer != "bronze":
            return ()
        names = [u.removeprefix("raw.") for u in dataset.upstream if u.startswith("raw.")]
        return tuple((n, self.sources[n]) for n in names if n in self.sources)

    def source_schema(self, name: str) -> dict[str, str]:
        """Columns of ``raw.<name>`` as SQL sees them: declared columns plus ingestion columns."""
        source = self.sources[name]
        schema = {c.name: c.type for c in source.columns}
        schema.update(INGESTION_COLUMNS)
        return schema

    def downstream_of(self, tables: Iterable[str]) -> set[str]:
        """Every table that reads one of ``tables``, directly or through others."""
        given = set(tables)
        found = {n for t in given for n in self.lineage.downstream(t) if n in self.datasets}
        return found - given

    def upstream_of(self, tables: Iterable[str]) -> set[str]:
        """Every table ``tables`` read, directly or through others."""
        given = set(tables)
        found = {n for t in given for n in self.lineage.upstream(t) if n in self.datasets}
        return found - given

    def pipeline_datasets(self, pipeline_id: str) -> tuple[str, ...]:
        """Datasets a pipeline runs, in execution order: by layer, by tag, or sinks' closure."""
        select = self.pipelines[pipeline_id].select
        chosen: set[str] = set()
        for name, dataset in self.datasets.items():
            if dataset.layer in select.layers or set(select.tags) & set(dataset.tags):
                chosen.add(name)
        for sink in select.sinks:
            chosen.add(sink)
            chosen.update(n for n in self.lineage.upstream(sink) if n in self.datasets)
        return tuple(n for n in self.datasets if n in chosen)
