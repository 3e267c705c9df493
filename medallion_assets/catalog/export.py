"""The derived catalog as rows of the seed design's relational tables (``catalog export``).

``catalog_rows(catalog, flags)`` returns table name -> rows (dicts with the columns of
``CATALOG_TABLES``): pipelines, stages (one per table), sources, targets, validation_rules,
control_flags (the effective flags: control.yaml overridden by the control store, with their
origin), retry_policies, healing_actions, dataset_lineage (with each column's transformation),
profiles, profile_settings, pipeline_profiles (each pipeline's profile in force and where it
comes from), throttles (each system's limits in force) and dataset_recovery_paths (every path
that produces each dataset, cheapest first, one row per table of the path in build order).
Lists and mappings are JSON text, so every column is a plain SQL type. Pure: the control store
writes the rows; what is in force beyond the files comes in as a ``RuntimeView``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from medallion_assets.catalog.catalog import Catalog

if TYPE_CHECKING:
    from medallion_assets.kill_switch.switch import EffectiveFlag

# table -> (column, SQL type) in order; the first column(s) named in _KEYS are the key.
CATALOG_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "pipelines": (
        ("id", "TEXT"), ("description", "TEXT"), ("enabled", "BOOLEAN"), ("schedule", "TEXT"),
        ("owners", "TEXT"), ("tags", "TEXT"), ("retry_policy", "TEXT"), ("datasets", "TEXT"),
    ),
    "stages": (
        ("dataset", "TEXT"), ("layer", "TEXT"), ("sql_path", "TEXT"), ("dialect", "TEXT"),
        ("statement", "TEXT"), ("system", "TEXT"), ("criticality", "TEXT"), ("owners", "TEXT"),
        ("tags", "TEXT"), ("pii_columns", "TEXT"), ("partitions", "TEXT"),
        ("retry_policy", "TEXT"), ("code_version", "TEXT"), ("upstream", "TEXT"),
    ),
    "sources": (
        ("name", "TEXT"), ("system", "TEXT"), ("bucket", "TEXT"), ("prefix", "TEXT"),
        ("format", "TEXT"), ("partition_pattern", "TEXT"), ("columns", "TEXT"),
        ("pii_columns", "TEXT"), ("replicas", "TEXT"),
    ),
    "targets": (
        ("dataset", "TEXT"), ("system", "TEXT"), ("warehouse_table", "TEXT"), ("mode", "TEXT"),
        ("definition", "TEXT"),
    ),
    "validation_rules": (
        ("dataset", "TEXT"), ("name", "TEXT"), ("kind", "TEXT"), ("severity", "TEXT"),
        ("blocking", "BOOLEAN"), ("description", "TEXT"), ("definition", "TEXT"),
    ),
    "control_flags": (
        ("scope", "TEXT"), ("name", "TEXT"), ("enabled", "BOOLEAN"), ("reason", "TEXT"),
        ("changed_by", "TEXT"), ("changed_at", "TEXT"), ("origin", "TEXT"),
    ),
    "retry_policies": (
        ("name", "TEXT"), ("max_retries", "INTEGER"), ("delay_seconds", "REAL"),
        ("backoff", "TEXT"), ("jitter", "TEXT"), ("max_delay_seconds", "REAL"),
        ("is_default", "BOOLEAN"),
    ),
    "healing_actions": (
        ("position", "INTEGER"), ("name", "TEXT"), ("exception", "TEXT"), ("message", "TEXT"),
        ("sqlstate", "TEXT"), ("error_code", "TEXT"), ("actions", "TEXT"),
        ("then_action", "TEXT"), ("description", "TEXT"),
    ),
    "dataset_lineage": (
        ("upstream", "TEXT"), ("downstream", "TEXT"), ("columns", "TEXT"), ("transform", "TEXT"),
        ("column_transforms", "TEXT"),
    ),
    # version 8 of the store: profiles, their settings, each pipeline's profile, the systems'
    # limits, and every way to produce each dataset
    "profiles": (("name", "TEXT"), ("description", "TEXT"), ("active", "BOOLEAN")),
    "profile_settings": (("profile", "TEXT"), ("setting", "TEXT"), ("value", "TEXT")),
    "pipeline_profiles": (
        ("pipeline", "TEXT"), ("profile", "TEXT"), ("origin", "TEXT"),
    ),
    "throttles": (
        ("system", "TEXT"), ("kind", "TEXT"), ("max_concurrent_jobs", "INTEGER"),
        ("rows_per_second", "REAL"), ("bytes_per_second", "REAL"),
        ("requests_per_second", "REAL"), ("origin", "TEXT"), ("reason", "TEXT"),
        ("changed_by", "TEXT"), ("changed_at", "TEXT"),
    ),
    "dataset_recovery_paths": (
        ("dataset", "TEXT"), ("path_order", "INTEGER"), ("sequence", "INTEGER"),
        ("path_cost", "REAL"), ("step_table", "TEXT"), ("route", "TEXT"),
        ("route_kind", "TEXT"), ("route_cost", "REAL"), ("needs", "TEXT"),
    ),
}  # fmt: skip
# The catalog tables of store version 2 and the columns they had (migrations.py creates them so).
V2_TABLES: dict[str, tuple[str, ...]] = {
    "pipelines": (), "stages": (), "sources": (), "targets": (), "validation_rules": (),
    "control_flags": (), "retry_policies": (), "healing_actions": (),
    "dataset_lineage": ("transform", "column_transforms"),  # the columns added since
}  # fmt: skip
KEYS: dict[str, tuple[str, ...]] = {
    "pipelines": ("id",),
    "stages": ("dataset",),
    "sources": ("name",),
    "targets": ("dataset",),
    "validation_rules": ("dataset", "name"),
    "control_flags": ("scope", "name"),
    "retry_policies": ("name",),
    "healing_actions": ("position",),
    "dataset_lineage": ("upstream", "downstream"),
    "profiles": ("name",),
    "profile_settings": ("profile", "setting"),
    "pipeline_profiles": ("pipeline",),
    "throttles": ("system",),
    "dataset_recovery_paths": ("dataset", "path_order", "sequence"),
}


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True)
class RuntimeView:
    """What is in force beyond the metadata files, found by the caller (``export.rows``):
    each pipeline's profile (pipeline, profile, where it comes from), the operators' throttles
    (system -> rates set, and who, when, why), and every path of every dataset
    (``recovery.paths.Listing``-shaped rows: dataset, path order, its steps)."""

    pipeline_profiles: tuple[tuple[str, str, str], ...] = ()
    throttles: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    recovery_paths: tuple[Mapping[str, Any], ...] = ()


def catalog_rows(
    catalog: Catalog, flags: Iterable[EffectiveFlag], view: RuntimeView | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Every catalog table's rows; ``flags`` are the effective flags, ``view`` the rest of
    what is in force (none: no pipeline profiles, no throttle overrides, no recovery paths)."""
    view = view or RuntimeView()
    rows: dict[str, list[dict[str, Any]]] = {
        "pipelines": [
            {
                "id": pid,
                "description": p.description,
                "enabled": p.enabled,
                "schedule": p.schedule,
                "owners": _json(list(p.owners)),
                "tags": _json(list(p.tags)),
                "retry_policy": p.retry_policy,
                "datasets": _json(list(catalog.pipeline_datasets(pid))),
            }
            for pid, p in catalog.pipelines.items()
        ],
        "stages": [
            {
                "dataset": name,
                "layer": d.layer,
                "sql_path": d.sql_path,
                "dialect": d.dialect,
                "statement": d.statement_kind,
                "system": d.system,
                "criticality": d.criticality,
                "owners": _json(list(d.owners)),
                "tags": _json(list(d.tags)),
                "pii_columns": _json(list(d.pii_columns)),
                "partitions": _json(
                    d.settings.partitions.model_dump(mode="json") if d.settings.partitions else None
                ),
                "retry_policy": d.settings.retry_policy or catalog.default_retry_policy,
                "code_version": d.code_version,
                "upstream": _json(list(d.upstream)),
            }
            for name, d in catalog.datasets.items()
        ],
        "sources": [
            {
                "name": name,
                "system": s.system,
                "bucket": s.bucket,
                "prefix": s.prefix,
                "format": s.format,
                "partition_pattern": s.partition,
                "columns": _json([c.model_dump(mode="json") for c in s.columns]),
                "pii_columns": _json(list(s.pii_columns)),
                "replicas": _json([r.model_dump(mode="json") for r in s.replicas]),
            }
            for name, s in catalog.sources.items()
        ],
        "targets": [
            {
                "dataset": table,
                "system": t.system,
                "warehouse_table": t.warehouse_table,
                "mode": t.mode,
                "definition": _json(t.model_dump(mode="json")),
            }
            for table, t in catalog.targets.items()
        ],
        "validation_rules": [
            {
                "dataset": name,
                "name": r.label(),
                "kind": r.kind,
                "severity": r.severity,
                "blocking": r.blocking,
                "description": r.description,
                "definition": _json(r.model_dump(mode="json")),
            }
            for name, d in catalog.datasets.items()
            for r in d.rules
        ],
        "control_flags": [
            {
                "scope": f.scope,
                "name": f.name,
                "enabled": f.enabled,
                "reason": f.reason,
                "changed_by": f.changed_by,
                "changed_at": f.changed_at,
                "origin": f.origin,
            }
            for f in flags
        ],
        "retry_policies": [
            {
                "name": name,
                **p.model_dump(mode="json"),
                "is_default": name == catalog.default_retry_policy,
            }
            for name, p in catalog.retry_policies.items()
        ],
        "healing_actions": [
            {
                "position": i,
                "name": r.name,
                "exception": r.match.exception,
                "message": r.match.message,
                "sqlstate": r.match.sqlstate,
                "error_code": r.error_code,
                "actions": _json(list(r.actions)),
                "then_action": r.then,
                "description": r.description,
            }
            for i, r in enumerate(catalog.healing_rules, 1)
        ],
        "dataset_lineage": _lineage_rows(catalog),
        **_profile_rows(catalog, view),
        "throttles": _throttle_rows(catalog, view),
        "dataset_recovery_paths": [dict(r) for r in view.recovery_paths],
    }
    return rows


def _profile_rows(catalog: Catalog, view: RuntimeView) -> dict[str, list[dict[str, Any]]]:
    profiles = catalog.profiles
    if profiles is None:
        return {"profiles": [], "profile_settings": [], "pipeline_profiles": []}
    return {
        "profiles": [
            {"name": name, "description": p.description, "active": name == profiles.active}
            for name, p in profiles.profiles.items()
        ],
        "profile_settings": [
            {"profile": name, "setting": setting, "value": _json(value)}
            for name, p in profiles.profiles.items()
            for setting, value in p.settings.model_dump(mode="json").items()
        ],
        "pipeline_profiles": [
            {"pipeline": pipeline, "profile": profile, "origin": origin}
            for pipeline, profile, origin in view.pipeline_profiles
        ],
    }


def _throttle_rows(catalog: Catalog, view: RuntimeView) -> list[dict[str, Any]]:
    """Each system's limits in force: systems.yaml's, with an operator's rates over them."""
    rows = []
    for name, system in catalog.systems.items():
        limits = system.throttle.model_dump(mode="json")
        override = view.throttles.get(name)
        row = {"system": name, "kind": system.kind, **limits, "origin": "systems.yaml"}
        row |= {"reason": "", "changed_by": "", "changed_at": ""}
        if override is not None:
            row |= {k: v for k, v in override.items() if k in limits and v is not None}
            row |= {k: override[k] for k in ("reason", "changed_by", "changed_at")}
            row["origin"] = "control store"
        rows.append(row)
    return rows


def _lineage_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """One row per table edge: the column edges along it (``source -> target``), the transform
    that makes the downstream table (its SQL file; empty for an exposure) and, in
    ``column_transforms``, how each of its columns is made (``target: direct|expression...``)."""
    columns: dict[tuple[str, str], set[str]] = {}
    transforms: dict[tuple[str, str], set[str]] = {}
    for edge in catalog.lineage.column_edges:
        source, target = edge.source.rsplit(".", 1), edge.target.rsplit(".", 1)
        key = (source[0], target[0])
        columns.setdefault(key, set()).add(f"{source[1]} -> {target[1]}")
        transforms.setdefault(key, set()).add(f"{target[1]}: {edge.transform}")
    return [
        {
            "upstream": u,
            "downstream": d,
            "columns": _json(sorted(columns.get((u, d), ()))),
            "transform": catalog.datasets[d].sql_path if d in catalog.datasets else "",
            "column_transforms": _json(sorted(transforms.get((u, d), ()))),
        }
        for u, d in catalog.lineage.dag.edges()
    ]
