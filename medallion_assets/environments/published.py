"""What a plan compares: the project folder (``project_of``) and what ``main`` has published
(``main_of``), and what an environment has built (``built_in``), read from the lake's catalog
without a JVM."""

from __future__ import annotations

from functools import cache

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.rules import ReferentialIntegrityRule
from medallion_assets.environments.plan import Project, Published
from medallion_assets.lake import Lake, Version
from medallion_assets.lake.env_refs import env_branch, env_day_prefix, env_day_tag
from medallion_assets.lineage.read_columns import columns_read
from medallion_assets.lineage.shape import Shape, sql_shape
from medallion_assets.lineage.statement import SqlError, parse_statement


def project_of(catalog: Catalog) -> Project:
    datasets = catalog.datasets
    readers: dict[str, list[str]] = {}
    for name, dataset in datasets.items():
        for upstream in dataset.upstream:
            readers.setdefault(upstream, []).append(name)
    exposures: dict[str, list[str]] = {}
    for exposure in catalog.exposures.values():
        for table in exposure.depends_on:
            exposures.setdefault(table, []).append(exposure.name)

    rules: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for name, dataset in datasets.items():
        for rule in dataset.rules:
            if isinstance(rule, ReferentialIntegrityRule):
                label = f"rule {rule.label()} of {name}"
                rules.setdefault(rule.to_table, []).append((label, frozenset(rule.to_columns)))

    @cache
    def reads(reader: str, table: str) -> frozenset[str] | None:
        dataset = datasets[reader]
        try:
            return columns_read(parse_statement(dataset.sql, dataset.dialect, reader), table)
        except SqlError:
            return None

    @cache
    def shape(table: str) -> Shape:
        dataset = datasets[table]
        return sql_shape(dataset.sql, dataset.dialect, table)

    return Project(
        code_versions={n: d.code_version for n, d in datasets.items()},
        shape=shape,
        readers={t: tuple(r) for t, r in readers.items()},
        exposures={t: tuple(e) for t, e in exposures.items()},
        targets={n: d.target.warehouse_table for n, d in datasets.items() if d.target},
        reads=reads,
        rules={t: tuple(r) for t, r in rules.items()},
    )


def main_of(lake: Lake, catalog: Catalog) -> dict[str, Published]:
    """What ``main`` has of each table of the project (none: not in the map)."""
    on_main = lake.in_env(None)
    found = {}
    for name in catalog.datasets:
        versions = on_main.current_versions(name)
        if not versions:
            continue
        newest = max(versions, key=lambda v: v.created_at)
        found[name] = Published(
            frozenset(v.code_version for v in versions),
            Shape.from_json(newest.shape) if newest.shape else None,
        )
    return found


def built_in(lake: Lake, env: str, table: str) -> list[Version]:
    """The versions environment ``env`` built of ``table`` (its branch's, or its days'), not
    those it reads from ``main``."""
    refs = lake.refs_of(table)
    days = {r for r in refs if r.startswith(env_day_prefix(env))}
    if env_branch(env) not in refs and not days:
        return []
    found = lake.in_env(env).current_versions(table)
    if not days:
        return found
    return [v for v in found if v.partition and env_day_tag(env, v.partition) in days]
