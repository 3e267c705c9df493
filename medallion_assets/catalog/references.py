"""Cross-file reference checks: every name one file uses must exist in another.

Each check returns issues naming both sides (the file that refers, and what it should refer to).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from medallion_assets.catalog.errors import CatalogIssue, format_field
from medallion_assets.catalog.known import KnownNames, not_numeric, suggest
from medallion_assets.catalog.metadata_files import LoadedFile
from medallion_assets.catalog.models import (
    DatasetsFile,
    ExposuresFile,
    ProjectFile,
    SystemsFile,
    TargetsFile,
    ValidationFile,
)
from medallion_assets.catalog.names import check_name_problem
from medallion_assets.catalog.operations import (
    ControlFile,
    PipelinesFile,
    PoliciesFile,
    ProfilesFile,
)
from medallion_assets.catalog.rules import (
    FreshnessRule,
    RangeRule,
    Rule,
    duplicate_labels,
    placement_problems,
)
from medallion_assets.catalog.sources import SourcesFile
from medallion_assets.catalog.yaml_source import Loc

WAREHOUSE_KINDS = ("redshift", "postgres", "duckdb")


class ReferenceChecker:
    def __init__(self, files: Mapping[str, LoadedFile], known: KnownNames):
        self.files = files
        self.known = known
        self.issues: list[CatalogIssue] = []
        targets = self._model("targets")
        # Tables loaded into a warehouse (where a reconciliation rule makes sense).
        self._loaded = (
            {t.table for t in targets.targets} if isinstance(targets, TargetsFile) else set()
        )

    def _model(self, stem: str) -> object | None:
        loaded = self.files.get(stem)
        return loaded.model if loaded else None

    def _issue(self, stem: str, loc: Loc, message: str, fix: str) -> None:
        loaded = self.files.get(stem)
        if loaded is not None and loaded.document is not None:
            self.issues.append(loaded.document.issue(loc, message, fix))
        else:
            self.issues.append(
                CatalogIssue(f"metadata/{stem}.yaml", format_field(loc), message, fix)
            )

    def _require(self, stem: str, loc: Loc, name: str, pool: Iterable[str], what: str) -> bool:
        pool = list(pool)
        if name in pool:
            return True
        self._issue(stem, loc, f"{what} {name!r} does not exist", suggest(name, pool))
        return False

    def check_all(self) -> list[CatalogIssue]:
        self.check_project()
        self.check_sources()
        self.check_targets()
        self.check_policies()
        self.check_datasets()
        self.check_pipelines()
        self.check_exposures()
        self.check_control()
        self.check_profiles()
        return self.issues

    # --- per file ---------------------------------------------------------------------------

    def _systems(self) -> Mapping[str, object]:
        systems = self._model("systems")
        return systems.systems if isinstance(systems, SystemsFile) else {}

    def check_project(self) -> None:
        project = self._model("project")
        if isinstance(project, ProjectFile) and isinstance(self._model("systems"), SystemsFile):
            self._require(
                "project", ("compute_system",), project.compute_system, self._systems(), "system"
            )

    def check_sources(self) -> None:
        sources = self._model("sources")
        if not isinstance(sources, SourcesFile) or not isinstance(
            self._model("systems"), SystemsFile
        ):
            return
        for name, source in sources.sources.items():
            self._require(
                "sources", ("sources", name, "system"), source.system, self._systems(), "system"
            )
            for i, replica in enumerate(source.replicas):
                self._require(
                    "sources",
                    ("sources", name, "replicas", i, "system"),
                    replica.system,
                    self._systems(),
                    "system",
                )

    def check_targets(self) -> None:
        targets = self._model("targets")
        if not isinstance(targets, TargetsFile):
            return
        seen: dict[str, int] = {}
        systems = self._systems()
        for i, target in enumerate(targets.targets):
            loc: Loc = ("targets", i)
            if target.table in seen:
                self._issue(
                    "targets",
                    (*loc, "table"),
                    f"table {target.table!r} has two targets",
                    f"keep one; the first is targets[{seen[target.table]}]",
                )
            seen.setdefault(target.table, i)
            if self._require(
                "targets", (*loc, "table"), target.table, self.known.datasets, "table"
            ):
                if not target.table.startswith("gold."):
                    self._issue(
                        "targets",
                        (*loc, "table"),
                        "only gold tables load into the warehouse",
                        f"point the target at a gold table, not {target.table!r}",
                    )
                self._columns_exist(
                    "targets",
                    loc,
                    target.table,
                    [
                        *target.keys,
                        *target.sort_keys,
                        *([target.dist_key] if target.dist_key else []),
                    ],
                )
            if isinstance(self._model("systems"), SystemsFile) and self._require(
                "targets", (*loc, "system"), target.system, systems, "system"
            ):
                kind = getattr(systems[target.system], "kind", "")
                if kind not in WAREHOUSE_KINDS:
                    self._issue(
                        "targets",
                        (*loc, "system"),
                        f"system {target.system!r} is a {kind} system, not a warehouse",
                        f"use a system of kind {', '.join(WAREHOUSE_KINDS)}",
                    )

    def _columns_exist(self, stem: str, loc: Loc, table: str, columns: Iterable[str]) -> None:
        known = self.known.datasets.get(table)
        if known is None:
            return
        for column in columns:
            if column not in known:
                self._issue(
                    stem,
                    loc,
                    f"column {column!r} is not a column of {table}",
                    suggest(column, known),
                )

    def check_policies(self) -> None:
        policies = self._model("policies")
        if isinstance(policies, PoliciesFile) and policies.default_retry_policy:
            self._require(
                "policies",
                ("default_retry_policy",),
                policies.default_retry_policy,
                policies.retry_policies,
                "retry policy",
            )
        if isinstance(policies, PoliciesFile):
            names = [r.name for r in policies.healing_rules]
            for i, name in enumerate(names):
                if names.index(name) != i:
                    self._issue(
                        "policies",
                        ("healing_rules", i, "name"),
                        f"healing rule {name!r} is defined twice",
                        "give each rule a unique name",
                    )

    def _retry_policies(self) -> Mapping[str, object] | None:
        policies = self._model("policies")
        return policies.retry_policies if isinstance(policies, PoliciesFile) else None

    def check_datasets(self) -> None:
        datasets = self._model("datasets")
        if not isinstance(datasets, DatasetsFile):
            return
        validation = self._model("validation")
        rule_sets = validation.rule_sets if isinstance(validation, ValidationFile) else None
        if rule_sets is not None:
            for set_name, rules in rule_sets.items():
                for i, rule in enumerate(rules):
                    self._rule_tables("validation", ("rule_sets", set_name, i), rule)
        for name, settings in datasets.datasets.items():
            loc: Loc = ("datasets", name)
            if not self._require("datasets", loc, name, self.known.datasets, "table"):
                continue
            self._columns_exist("datasets", (*loc, "pii_columns"), name, settings.pii_columns)
            if settings.partitions is not None:
                self._columns_exist(
                    "datasets", (*loc, "partitions", "column"), name, [settings.partitions.column]
                )
            if settings.retry_policy and (policies := self._retry_policies()) is not None:
                self._require(
                    "datasets",
                    (*loc, "retry_policy"),
                    settings.retry_policy,
                    policies,
                    "retry policy",
                )
            for i, rule in enumerate(settings.rules):
                self._rule("datasets", (*loc, "rules", i), name, rule)
            attached = [r for s in settings.checks for r in (rule_sets or {}).get(s, ())]
            for label in duplicate_labels([*attached, *settings.rules]):
                self._issue(
                    "datasets",
                    loc,
                    f"two checks of {name} are both named {label!r}",
                    "give one of them its own name: name: <check_name>",
                )
            for i, set_name in enumerate(settings.checks):
                if rule_sets is None:
                    continue
                if self._require(
                    "datasets",
                    (*loc, "checks", i),
                    set_name,
                    rule_sets,
                    "rule set (validation.yaml)",
                ):
                    for rule in rule_sets[set_name]:
                        self._rule("datasets", (*loc, "checks", i), name, rule, set_name)

    def _rule(self, stem: str, loc: Loc, table: str, rule: Rule, via: str | None = None) -> None:
        known = self.known.datasets.get(table)
        where = f" (rule set {via!r})" if via else ""
        problem = check_name_problem(rule.label())
        if problem is not None:
            safe = re.sub(r"[^A-Za-z0-9_]", "_", rule.label())
            self._issue(
                stem,
                loc,
                f"{rule.kind} rule{where}: its check name {problem}",
                f"give the rule a name: 'name: {safe}'",
            )
        for message, fix in placement_problems(rule, table, known, table in self._loaded):
            self._issue(stem, loc, f"{message}{where}", fix)
        if known is not None:
            for column in rule.referenced_columns():
                if isinstance(rule, FreshnessRule) and rule.column is None:
                    continue  # placement_problems explains the missing _ingested_at
                if column not in known:
                    self._issue(
                        stem,
                        loc,
                        f"{rule.kind} rule{where} names column {column!r}, "
                        f"which {table} does not have",
                        suggest(column, known),
                    )
                    continue
                kind = self.known.types.get(table, {}).get(column, "unknown")
                if isinstance(rule, RangeRule) and not_numeric(kind):
                    self._issue(
                        stem,
                        loc,
                        f"range rule{where} on {column!r}, a {kind.lower()} column of {table}: "
                        "a range compares numbers",
                        "use accepted_values or regex for text, or cast the column to a number "
                        "in the SQL",
                    )
        if via is None:
            self._rule_tables(stem, loc, rule)

    def _rule_tables(self, stem: str, loc: Loc, rule: Rule) -> None:
        for other in rule.referenced_tables():
            if self._require(stem, (*loc, "to_table"), other, self.known.datasets, "table"):
                to_columns = getattr(rule, "to_columns", ())
                self._columns_exist(stem, (*loc, "to_columns"), other, to_columns)

    def check_pipelines(self) -> None:
        pipelines = self._model("pipelines")
        if not isinstance(pipelines, PipelinesFile):
            return
        ids: list[str] = []
        policies = self._retry_policies()
        for i, pipeline in enumerate(pipelines.pipelines):
            loc: Loc = ("pipelines", i)
            if pipeline.id in ids:
                self._issue(
                    "pipelines",
                    (*loc, "id"),
                    f"pipeline id {pipeline.id!r} is used twice",
                    "give each pipeline a unique id",
                )
            ids.append(pipeline.id)
            for j, sink in enumerate(pipeline.select.sinks):
                self._require(
                    "pipelines",
                    (*loc, "select", "sinks", j),
                    sink,
                    self.known.datasets,
                    "sink table",
                )
            if pipeline.retry_policy and policies is not None:
                self._require(
                    "pipelines",
                    (*loc, "retry_policy"),
                    pipeline.retry_policy,
                    policies,
                    "retry policy",
                )

    def check_exposures(self) -> None:
        exposures = self._model("exposures")
        if not isinstance(exposures, ExposuresFile):
            return
        names: list[str] = []
        for i, exposure in enumerate(exposures.exposures):
            if exposure.name in names:
                self._issue(
                    "exposures",
                    ("exposures", i, "name"),
                    f"exposure {exposure.name!r} is defined twice",
                    "use unique names",
                )
            names.append(exposure.name)
            for j, table in enumerate(exposure.depends_on):
                self._require(
                    "exposures",
                    ("exposures", i, "depends_on", j),
                    table,
                    self.known.datasets,
                    "table",
                )

    def check_control(self) -> None:
        control = self._model("control")
        if not isinstance(control, ControlFile):
            return
        pipelines = self._model("pipelines")
        targets = self._model("targets")
        pools: dict[str, Iterable[str]] = {
            "dataset": self.known.datasets,
            "layer": ("bronze", "silver", "gold"),
        }
        if self.known.sources_loaded:
            pools["source"] = self.known.sources
        if isinstance(pipelines, PipelinesFile):
            pools["pipeline"] = [p.id for p in pipelines.pipelines]
        if isinstance(targets, TargetsFile):
            pools["target"] = [t.table for t in targets.targets]
        for i, flag in enumerate(control.flags):
            if flag.scope in pools:
                self._require(
                    "control", ("flags", i, "name"), flag.name, pools[flag.scope], flag.scope
                )

    def check_profiles(self) -> None:
        profiles = self._model("profiles")
        pipelines = self._model("pipelines")
        if not isinstance(profiles, ProfilesFile):
            return
        for pipeline_id, profile in profiles.pipeline_profiles.items():
            loc: Loc = ("pipeline_profiles", pipeline_id)
            self._require("profiles", loc, profile, profiles.profiles, "profile")
            if isinstance(pipelines, PipelinesFile):
                self._require(
                    "profiles", loc, pipeline_id, [p.id for p in pipelines.pipelines], "pipeline"
                )
