"""The seam between the catalog and Dagster: one catalog object in, one ``AssetSpec`` out.

Spec-building is pure: it reads the catalog and runs nothing, so the whole graph can be built
and tested without Spark. Subclass ``DatasetTranslator`` to change keys, groups or tags.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from medallion_assets.catalog import Catalog, Dataset
from medallion_assets.catalog.describe import column_descriptions
from medallion_assets.catalog.models import Exposure
from medallion_assets.catalog.rules import Rule
from medallion_assets.catalog.sources import Source

WAREHOUSE_KINDS = {"redshift", "postgres", "duckdb"}
CHECK_DEP = "medallion/dependency"  # AssetDep metadata: a dependency of checks, not of the SQL


def rule_summary(rule: Rule) -> str:
    """One line describing a rule, for a check without a description of its own."""
    fields = rule.model_dump(exclude={"kind", "name", "severity", "description"}, mode="json")
    shown = ", ".join(f"{k}={v}" for k, v in fields.items() if v not in (None, [], ()))
    blocking = "blocks publishing" if rule.blocking else "warns"
    return f"{rule.kind}({shown}); {blocking} when it fails"


def table_schema(
    columns: Sequence[tuple[str, str | None]], descriptions: Mapping[str, str]
) -> dg.TableSchema:
    """Dagster's column schema: each column's type (blank where the SQL does not tell it
    before a run; a materialization carries the published table's) and description."""
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name,
                "" if kind in (None, "unknown") else kind,
                description=descriptions.get(name) or None,
            )
            for name, kind in columns
        ]
    )


RESOURCES = ("spark", "lake", "s3", "warehouse", "control")  # what a table's step uses
_PREFIX = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")


@dataclass(frozen=True)
class Names:
    """How one project's tables, steps, jobs, schedules, sensors and resources are named in
    Dagster. Alone in its code location a project needs no prefix: ``silver.orders`` is the
    asset ``silver/orders``, its step ``silver__orders``, the resources ``spark``, ``lake``...
    Several projects in one code location each take a prefix, which goes in front of every
    name: ``sales/silver/orders``, ``sales__silver__orders``, ``sales__daily``,
    ``sales_spark``."""

    prefix: str | None = None

    def __post_init__(self) -> None:
        if self.prefix is not None and not _PREFIX.fullmatch(self.prefix):
            raise ValueError(
                f"prefix {self.prefix!r}: expected lower-case letters, digits and single "
                "underscores, starting with a letter (e.g. sales or eu_sales)"
            )

    def key(self, table: str) -> dg.AssetKey:
        """``silver.orders_usd`` -> AssetKey(["silver", "orders_usd"]); raw and exposures
        alike; the prefix first."""
        path = table.split(".", 1)
        return dg.AssetKey([self.prefix, *path] if self.prefix else path)

    def step(self, table: str) -> str:
        """The op (and step key) of a table's asset: ``silver.orders_usd`` ->
        ``silver__orders_usd`` (``sales__silver__orders_usd`` with a prefix)."""
        return self.name(table.replace(".", "__"))

    def table(self, step_key: str | None) -> str:
        """The table of a step key (the inverse of ``step``); "" for another project's."""
        key = step_key or ""
        if self.prefix:
            if not key.startswith(f"{self.prefix}__"):
                return ""
            key = key[len(self.prefix) + 2 :]
        return key.replace("__", ".", 1)

    def name(self, name: str) -> str:
        """A job's, schedule's or sensor's name."""
        return f"{self.prefix}__{name}" if self.prefix else name

    def group(self, layer: str) -> str:
        return f"{self.prefix}_{layer}" if self.prefix else layer

    def resource(self, key: str) -> str:
        """A resource's key: ``spark`` -> ``sales_spark``."""
        return f"{self.prefix}_{key}" if self.prefix else key

    def resource_keys(self) -> set[str]:
        return {self.resource(key) for key in RESOURCES}

    def resources_of(self, context: Any) -> StepResources:
        """The project's resources of a step's (or sensor's) ``context``."""
        return StepResources(context.resources, self)

    def table_of_key(self, key: dg.AssetKey) -> str:
        """The table of an asset key (the inverse of ``key``); "" for another project's."""
        path = key.path
        if self.prefix:
            if len(path) < 2 or path[0] != self.prefix:
                return ""
            path = path[1:]
        return ".".join(path)


@dataclass(frozen=True)
class StepResources:
    """One project's resources, as a step (or sensor) sees them: ``spark`` is the resource
    ``sales_spark`` of the project prefixed ``sales``. Each is looked up when asked for, so a
    sensor requires only those it uses."""

    resources: Any  # the context's
    names: Names

    def _get(self, key: str) -> Any:
        return getattr(self.resources, self.names.resource(key))

    @property
    def spark(self) -> Any:
        return self._get("spark")

    @property
    def lake(self) -> Any:
        return self._get("lake")

    @property
    def s3(self) -> Any:
        return self._get("s3")

    @property
    def warehouse(self) -> Any:
        return self._get("warehouse")

    @property
    def control(self) -> Any:
        return self._get("control")


DEFAULT_NAMES = Names()
# Asset attributes over the translator's (a component's ``translation:``): spec, table -> spec.
Translation = Callable[[dg.AssetSpec, Dataset], dg.AssetSpec]


@dataclass(frozen=True)
class StepOptions:
    """Settings of every table's op (a component's ``op:``): tags, a pool over the table's
    system's, a backfill policy over the single-run one of daily tables, a description."""

    tags: Mapping[str, str] | None = None
    pool: str | None = None
    backfill_policy: dg.BackfillPolicy | None = None
    description: str | None = None

    @classmethod
    def of(cls, op: Any) -> StepOptions:
        """From Dagster's ``OpSpec`` (None: the defaults)."""
        if op is None:
            return cls()
        tags = {str(k): str(v) for k, v in (op.tags or {}).items()}
        return cls(tags or None, op.pool, op.backfill_policy, op.description)


class TranslationError(ValueError):
    """A translation that would change what the project's own machinery relies on."""


table_key = DEFAULT_NAMES.key  # a project alone in its code location (the CLI's)
step_name = DEFAULT_NAMES.step
step_table = DEFAULT_NAMES.table


class DatasetTranslator:
    def __init__(
        self,
        catalog: Catalog,
        warehouse_kind: str | None = None,
        names: Names = DEFAULT_NAMES,
        translation: Translation | None = None,
    ):
        """``warehouse_kind``: the warehouse in force (``MedallionSettings.warehouse_kind``);
        None: each target's system kind. ``names``: the project's names in Dagster.
        ``translation``: asset attributes applied over each table's spec (not its key, its
        deps or its partitions: the kill switch, sensors and runs find tables by them)."""
        self.catalog = catalog
        self.names = names
        self.translation = translation
        self.warehouse_kind = warehouse_kind
        self._descriptions: dict[str, dict[str, str]] = {}
        # Tables PII reaches unhashed: tagged pii even when the metadata does not say so.
        self._pii_tables = {
            r.column.rsplit(".", 1)[0] for r in catalog.lineage.pii_trace() if r.exposed
        }
        # One daily partitions definition for the whole project, from its earliest start:
        # Dagster puts a pipeline's (or a layer's) tables in one job only when they share one.
        # A table's own later start still holds: its earlier days build nothing (assets.py).
        starts = [
            d.settings.partitions.start
            for d in catalog.datasets.values()
            if d.settings.partitions is not None
        ]
        self._daily = (
            dg.DailyPartitionsDefinition(start_date=min(starts).isoformat()) if starts else None
        )

    def get_asset_spec(self, dataset: Dataset) -> dg.AssetSpec:
        spec = self.base_spec(dataset)
        if self.translation is None:
            return spec
        translated = self.translation(spec, dataset)
        for what, before, after in (
            ("key", spec.key, translated.key),
            ("deps", spec.deps, translated.deps),
            ("partitions", spec.partitions_def, translated.partitions_def),
        ):
            if before != after:
                raise TranslationError(
                    f"translation of {dataset.name} changes its asset {what}: a table's key is "
                    "its name (put a `prefix:` in the defs.yaml), its deps come from its SQL "
                    "and its partitions from metadata/datasets.yaml"
                )
        return translated

    def base_spec(self, dataset: Dataset) -> dg.AssetSpec:
        """The table's spec as the project's metadata and SQL make it."""
        return dg.AssetSpec(
            key=self.names.key(dataset.name),
            deps=self.deps(dataset),
            description=self.description(dataset),
            group_name=self.names.group(dataset.layer),
            code_version=dataset.code_version,
            owners=list(dataset.owners),
            tags=self.tags(dataset),
            kinds=self.kinds(dataset),
            metadata=self.metadata(dataset),
            partitions_def=self.partitions_def(dataset),
            # A table switched off by the kill switch yields nothing; what depends on it in
            # the run is then skipped by Dagster, not failed.
            skippable=True,
        )

    def deps(self, dataset: Dataset) -> list[dg.AssetDep]:
        """The lineage engine's upstream tables, then the tables the checks read (marked
        ``medallion/dependency: check``): those must be published before this table is
        checked, so Dagster runs them first."""
        deps = [dg.AssetDep(self.names.key(u)) for u in dataset.upstream]
        lineage = set(dataset.upstream)
        deps += [
            dg.AssetDep(self.names.key(t), metadata={CHECK_DEP: "check"})
            for t in dataset.check_dependencies
            if t not in lineage
        ]
        return deps

    def get_check_specs(self, dataset: Dataset) -> list[dg.AssetCheckSpec]:
        """One asset check per validation rule; severity error blocks publishing."""
        return [
            dg.AssetCheckSpec(
                name=rule.label(),
                asset=self.names.key(dataset.name),
                description=rule.description or rule_summary(rule),
                blocking=rule.blocking,
                additional_deps=[self.names.key(t) for t in rule.referenced_tables()],
                metadata={
                    "kind": rule.kind,
                    "severity": rule.severity,
                    "rule": dg.MetadataValue.json(rule.model_dump(mode="json")),
                },
            )
            for rule in dataset.rules
        ]

    def description(self, dataset: Dataset) -> str:
        if dataset.settings.description:
            return dataset.settings.description
        comments = [
            line.strip().lstrip("-").strip()
            for line in dataset.sql.splitlines()
            if line.strip().startswith("--") and "dialect:" not in line
        ]
        return " ".join(comments[:3]) or f"{dataset.layer} table built from {dataset.sql_path}"

    def tags(self, dataset: Dataset) -> dict[str, str]:
        tags = {
            "layer": dataset.layer,
            "criticality": dataset.criticality,
            "pii": "true" if dataset.pii_columns or dataset.name in self._pii_tables else "false",
            "system": dataset.system,
        }
        for tag in dataset.tags:
            tags[f"tag_{tag}"] = ""  # Dagster shows key-only tags as labels
        return tags

    def kinds(self, dataset: Dataset) -> set[str]:
        kinds = {"spark", "iceberg"}
        if dataset.layer == "bronze":
            kinds.add("s3")
        if dataset.target is not None:
            kind = self.warehouse_kind or self.catalog.systems[dataset.target.system].kind
            kinds.add(kind if kind in WAREHOUSE_KINDS else "warehouse")
        return kinds

    def metadata(self, dataset: Dataset) -> dict[str, object]:
        columns = [c for c in dataset.columns if c.column != "*"]
        lineage = {
            c.column: [
                dg.TableColumnDep(
                    asset_key=self.names.key(s.rsplit(".", 1)[0]), column_name=s.rsplit(".", 1)[1]
                )
                for s in c.sources
            ]
            for c in columns
        }
        metadata: dict[str, object] = {
            "sql": dg.MetadataValue.md(f"```sql\n{dataset.sql.strip()}\n```"),
            "sql_path": dataset.sql_path,
            "dialect": dataset.dialect,
            "dagster/column_schema": table_schema(
                [(c.column, c.type) for c in columns],
                column_descriptions(self.catalog, dataset.name, self._descriptions),
            ),
            "dagster/column_lineage": dg.TableColumnLineage(deps_by_column=lineage),
        }
        if dataset.target is not None:
            metadata["warehouse_table"] = dataset.target.warehouse_table
            metadata["load_mode"] = dataset.target.mode
        return metadata

    def partitions_def(self, dataset: Dataset) -> dg.PartitionsDefinition[str] | None:
        """The project's daily partitions for a daily table (from the project's earliest
        ``partitions.start``), None for a table built as a whole."""
        return None if dataset.settings.partitions is None else self._daily

    def get_source_spec(self, name: str, source: Source) -> dg.AssetSpec:
        return dg.AssetSpec(
            key=self.names.key(f"raw.{name}"),
            description=source.description or f"raw S3 source s3://{source.bucket}/{source.prefix}",
            group_name=self.names.group("raw"),
            owners=list(source.owners),
            kinds={"s3", source.format},
            tags={
                "layer": "raw",
                "pii": "true" if source.pii_columns else "false",
                "system": source.system,
            },
            metadata={
                "location": f"s3://{source.bucket}/{source.prefix}",
                "partition": source.partition or "",
                "dagster/column_schema": table_schema(
                    [(c.name, c.type) for c in source.columns],
                    {c.name: c.description for c in source.columns},
                ),
            },
        )

    def get_exposure_spec(self, exposure: Exposure) -> dg.AssetSpec:
        return dg.AssetSpec(
            key=self.names.key(f"exposure.{exposure.name}"),
            deps=[self.names.key(t) for t in exposure.depends_on],
            description=exposure.description or f"{exposure.type} {exposure.name}",
            group_name=self.names.group("exposures"),
            owners=list(exposure.owners),
            kinds={exposure.type},
            tags={"layer": "exposure", "criticality": exposure.criticality},
            metadata={"url": exposure.url or ""},
        )
