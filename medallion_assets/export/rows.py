"""``medallion catalog export``'s rows: the catalog with what is in force beyond its files.

The effective flags, each pipeline's profile (an operator's override, else profiles.yaml's),
the operators' throttles and every recovery path of every dataset join the catalog's own rows
(``catalog.export.catalog_rows``); the store then replaces the export in one transaction.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from medallion_assets.catalog.export import RuntimeView, catalog_rows
from medallion_assets.profiles.overrides import ProfileOverrides
from medallion_assets.profiles.profiles import effective_profile
from medallion_assets.recovery.paths import RecoveryGraph
from medallion_assets.throttles.rate_budgets import RateBudgets

if TYPE_CHECKING:
    from medallion_assets.catalog import Catalog
    from medallion_assets.control_plane import ControlPlane


def export_rows(catalog: Catalog, plane: ControlPlane) -> dict[str, list[dict[str, Any]]]:
    """Every catalog table's rows as ``catalog export`` writes them."""
    store = plane.store()
    profiles: tuple[tuple[str, str, str], ...] = ()
    if catalog.profiles is not None:
        overrides = ProfileOverrides(store).names()
        found = [effective_profile(catalog.profiles, p, overrides) for p in catalog.pipelines]
        profiles = tuple((e.pipeline, e.name, e.source) for e in found)
    throttles = {s: vars(o) for s, o in RateBudgets(store).overrides().items()}
    view = RuntimeView(profiles, throttles, tuple(recovery_path_rows(catalog)))
    return catalog_rows(catalog, plane.flags().values(), view)


def recovery_path_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """Every path of every dataset, nothing down: path_order 1 is the cheapest; each path's
    tables in build order (sequence 1 first, the dataset itself last)."""
    graph = RecoveryGraph.of(catalog)
    rows = []
    for table in catalog.datasets:
        for order, path in enumerate(graph.listing(table).paths, 1):
            for sequence, (name, route) in enumerate(path.routes, 1):
                step = graph.step(name, route)
                rows.append(
                    {
                        "dataset": table,
                        "path_order": order,
                        "sequence": sequence,
                        "path_cost": path.cost,
                        "step_table": name,
                        "route": route,
                        "route_kind": step.kind,
                        "route_cost": step.cost,
                        "needs": json.dumps(list(step.needs)),
                    }
                )
    return rows
