"""Recovery at run time: every table routed around what is down, along its cheapest path.

What is down is, together:

- the nodes healing saw fail (a source or replica bucket that does not exist) or an operator
  marked down (``medallion control down NODE --reason ...``), kept in the control store's
  ``down_nodes`` until ``medallion control up NODE``;
- the sources the kill switch switches off (``source:NAME``): a table rerouted off such a
  source (to a replica, or an alternate reading other tables) is no longer switched off by it;
- the nodes a caller names for one decision (a missing upstream table healing saw).

``recover`` plans the fewest route changes (``recovery.plan.plan_recovery``: a table keeps
its route while it is available and otherwise takes its cheapest available path, however many
hops up the broken node is) and sets them through the control store's routes, the reroute
mechanism ``medallion control route`` and every step already read; each change is audited
with the path taken. Its reroutes are ``changed_by: recovery``: once what they went around is
up again, the next recovery routes those tables back to their primary. A route an operator
set keeps while it is available.

    plan = recover(catalog, plane.store(), reason="eu-west-1 outage", changed_by="oncall")
    [r.describe() for r in plan.reroutes]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from medallion_assets.catalog.metadata_files import read_control_file
from medallion_assets.control import schema
from medallion_assets.control.store import AuditEntry, utc_now
from medallion_assets.kill_switch.switch import EffectiveFlag, effective_flags
from medallion_assets.recovery.paths import RecoveryGraph
from medallion_assets.recovery.plan import RecoveryPlan, plan_recovery

if TYPE_CHECKING:
    from medallion_assets.catalog import Catalog
    from medallion_assets.control.store import ControlStore

RECOVERY = "recovery"  # changed_by of the routes recovery sets


@dataclass(frozen=True)
class DownNode:
    node: str  # source:NAME, replica:NAME or system:NAME
    reason: str
    changed_by: str
    changed_at: str  # ISO 8601, UTC
    run_id: str = ""


class DownNodes:
    """The ``down_nodes`` table of one control store."""

    def __init__(self, store: ControlStore):
        self.store = store

    def all(self) -> dict[str, DownNode]:
        table = schema.down_nodes
        query = select(*schema.columns_for(table, DownNode)).order_by(table.c.node)
        with self.store.transaction() as db:
            rows = db.execute(query).all()
        return {r[0]: DownNode(*r) for r in rows}

    def mark(self, node: str, reason: str, changed_by: str, run_id: str = "") -> DownNode:
        """``node`` is down from now on; audited in the same transaction."""
        down = DownNode(node, reason, changed_by, utc_now(), run_id)
        with self.store.transaction() as db:
            db.execute(self.store.upsert(schema.down_nodes, vars(down)))
            self.store.append(
                db,
                AuditEntry(
                    down.changed_at,
                    "down",
                    node,
                    f"{node} marked down by {changed_by}: {reason}",
                    run_id,
                    {"reason": reason, "changed_by": changed_by},
                ),
            )
        return down

    def clear(self, node: str, reason: str, changed_by: str) -> bool:
        """``node`` is up again; False when it was not marked down."""
        table = schema.down_nodes
        with self.store.transaction() as db:
            gone = db.execute(delete(table).where(table.c.node == node)).rowcount
            if gone:
                self.store.append(
                    db,
                    AuditEntry(
                        utc_now(),
                        "up",
                        node,
                        f"{node} marked up by {changed_by}: {reason}",
                        "",
                        {"reason": reason, "changed_by": changed_by},
                    ),
                )
        return bool(gone)


def switched_off(
    catalog: Catalog, flags: Mapping[tuple[str, str], EffectiveFlag]
) -> dict[str, str]:
    """The sources the kill switch has off, as down nodes with why. A disabled dataset or
    layer is not down: its current version stays published and its readers read it."""
    return {
        f"source:{name}": f"kill switch {flag.entity}" + (f": {flag.reason}" if flag.reason else "")
        for (scope, name), flag in flags.items()
        if scope == "source" and not flag.enabled and name in catalog.sources
    }


def down_now(
    catalog: Catalog, store: ControlStore, flags: Mapping[tuple[str, str], EffectiveFlag]
) -> dict[str, str]:
    """Every node down now, with why: marked in the store, or switched off by ``flags`` (the
    effective flags, ``ControlPlane.flags``)."""
    marked = {
        n: f"marked down by {d.changed_by} at {d.changed_at}: {d.reason}"
        for n, d in DownNodes(store).all().items()
    }
    return {**switched_off(catalog, flags), **marked}


def project_flags(catalog: Catalog, store: ControlStore) -> dict[tuple[str, str], EffectiveFlag]:
    """The effective flags of ``catalog``'s project: its control.yaml, then the store's."""
    return effective_flags(read_control_file(catalog.root).flags, store.flags())


def recover(
    catalog: Catalog,
    store: ControlStore,
    also_down: Mapping[str, str] | None = None,
    *,
    reason: str,
    changed_by: str,
    run_id: str = "",
    apply: bool = True,
    flags: Mapping[tuple[str, str], EffectiveFlag] | None = None,
) -> RecoveryPlan:
    """Plan the routes around everything down now (and ``also_down``: node -> why) and, with
    ``apply``, set them, each audited with its path and what it went around. ``flags``: the
    effective flags when the caller has just read them (else read now)."""
    flags = project_flags(catalog, store) if flags is None else flags
    down = {**down_now(catalog, store, flags), **(also_down or {})}
    overrides = store.routes()
    plan = plan_recovery(
        RecoveryGraph.of(catalog),
        down,
        {t: o.route for t, o in overrides.items()},
        [t for t, o in overrides.items() if o.changed_by == RECOVERY],
    )
    if not apply:
        return plan
    for reroute in plan.reroutes:
        if reroute.around:
            why = "; ".join(f"{n} is down ({down[n]})" for n in reroute.around)
        else:
            why = "nothing on its primary path is down any more"
        store.set_route(
            reroute.table,
            reroute.route,
            f"{reason}: {why}; path {reroute.path.describe()}",
            RECOVERY,
            run_id,
            {
                "requested_by": changed_by,
                "around": list(reroute.around),
                "path": list(reroute.path.nodes),
                "path_routes": dict(reroute.path.routes),
                "cost": reroute.path.cost,
            },
        )
    return plan
