"""``medallion control disable|enable|status|route|down|up|recover`` and ``medallion audit``:
kill switch, reroutes, recovery around what is down, and the log."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from medallion_assets.cli.common import fail, load, operator, project_option, settings_for
from medallion_assets.control.store import iso_utc
from medallion_assets.kill_switch.switch import parse_entity, table_entities
from medallion_assets.profiles.overrides import ProfileOverrides
from medallion_assets.recovery.paths import RecoveryGraph
from medallion_assets.recovery.recover import DownNodes
from medallion_assets.recovery.reroute import routes
from medallion_assets.throttles.rate_budgets import RateBudgets

if TYPE_CHECKING:
    from medallion_assets.catalog import Catalog
    from medallion_assets.control_plane import ControlPlane

format_option = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)


def open_plane(project: Path) -> ControlPlane:
    """The project's control plane with its store opened (a store that cannot be used is one
    line and exit 2, from the ``medallion`` group)."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.control_plane import ControlPlane

    plane = ControlPlane.of(settings_for(project))
    plane.store()
    return plane


@click.group()
def control() -> None:
    """Switch pipelines, layers, datasets, sources or targets off and on, without a redeploy."""


def _flip(enabled: bool) -> click.Command:
    verb = "enable" if enabled else "disable"

    @click.argument("entity")
    @click.option("--reason", required=True, help="Why (kept in the audit log).")
    @click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
    @project_option
    def flip(entity: str, reason: str, changed_by: str | None, project: Path) -> None:
        catalog = load(project)
        try:
            scope, name = parse_entity(catalog, entity)
        except ValueError as error:
            fail(str(error))
        who = operator(changed_by)
        plane = open_plane(project)
        flag = plane.store().set_flag(scope, name, enabled, reason, who)
        click.echo(f"{flag.entity} {verb}d by {who} at {flag.changed_at}: {reason}")
        if scope == "source":  # its readers go around it (or back) before anything is said
            _recover(catalog, plane, {}, f"{flag.entity} {verb}d: {reason}", who, apply=True)
        off = plane.disabled(catalog)
        if scope == "pipeline":
            affected = list(catalog.pipeline_datasets(name))
        else:
            affected = [t for t in catalog.datasets if (scope, name) in table_entities(catalog, t)]
        if not enabled:
            click.echo(f"switched off: {', '.join(t for t in affected if t in off) or 'nothing'}")
        else:
            still = [t for t in affected if t in off]
            click.echo(
                f"switched on: {', '.join(t for t in affected if t not in off) or 'nothing'}"
            )
            for table in still:
                click.echo(f"  still off: {off[table].describe()}")

    flip.__doc__ = (
        f"{verb.capitalize()} ENTITY (SCOPE:NAME, e.g. dataset:gold.revenue_by_region, "
        "source:orders, layer:gold, pipeline:fraud, target:gold.product_sales; a bare table name "
        "means dataset). Takes effect at the next table boundary of every run."
    )
    return control.command(name=verb)(flip)


disable = _flip(False)
enable = _flip(True)


@control.command()
@format_option
@project_option
def status(fmt: str, project: Path) -> None:
    """What is disabled, by whom, since when and why, and the tables it switches off; the
    routes, profile overrides, operators' throttles, self-healing throttle cuts and evolved
    columns in force; the ingest manifests
    and the latest warehouse load of each table."""
    catalog = load(project)
    plane = open_plane(project)
    flags = plane.flags()
    off = plane.disabled(catalog, flags=flags)
    disabled = [f for f in flags.values() if not f.enabled]
    state = _runtime_state(plane, time.time())
    if fmt == "json":
        data = {
            "control_store": plane.store().masked(plane.url),
            "flags": [vars(f) | {"entity": f.entity} for f in flags.values()],
            "disabled_tables": {t: d.flag.entity for t, d in off.items()},
            "routes": [vars(r) for r in plane.store().routes().values()],
            "down": [vars(n) for n in DownNodes(plane.store()).all().values()],
            "profile_overrides": [vars(o) for o in ProfileOverrides(plane.store()).all().values()],
            "throttle_overrides": [
                vars(o) for o in RateBudgets(plane.store()).overrides().values()
            ],
            **state,
        }
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"control store: {plane.store().masked(plane.url)}")
    down = DownNodes(plane.store()).all()
    if not disabled and not down and not plane.store().routes():
        click.echo("nothing is disabled, down or rerouted")
    elif not disabled:
        click.echo("nothing is disabled")
    for node in down.values():
        click.echo(
            f"DOWN     {node.node}  by {node.changed_by} since {node.changed_at}: {node.reason} "
            f"(`medallion control up {node.node}` when it is back)"
        )
    for flag in sorted(disabled, key=lambda f: f.entity):
        click.echo(
            f"DISABLED {flag.entity}  by {flag.changed_by or '?'} since "
            f"{flag.changed_at or '?'} ({flag.origin}): {flag.reason or 'no reason given'}"
        )
        tables = sorted(t for t, d in off.items() if d.flag.entity == flag.entity)
        if tables:
            click.echo(f"  switches off: {', '.join(tables)}")
    overrides = [f for f in flags.values() if f.origin == "control store" and f.enabled]
    for flag in sorted(overrides, key=lambda f: f.entity):
        click.echo(f"enabled  {flag.entity}  by {flag.changed_by} since {flag.changed_at}")
    for table, route in plane.store().routes().items():
        click.echo(
            f"REROUTED {table} -> {route.route}  by {route.changed_by} since "
            f"{route.changed_at}: {route.reason}"
        )
    for pipeline, override in ProfileOverrides(plane.store()).all().items():
        click.echo(
            f"PROFILE  {pipeline} -> {override.profile}  by {override.changed_by} since "
            f"{override.changed_at}: {override.reason}"
        )
    for system, throttled in RateBudgets(plane.store()).overrides().items():
        click.echo(
            f"THROTTLE {system} -> {throttled.describe()}  by {throttled.changed_by} since "
            f"{throttled.changed_at}: {throttled.reason}"
        )
    _print_runtime_state(state)


def _runtime_state(plane: ControlPlane, now: float) -> dict[str, list[dict[str, object]]]:
    """The runtime state in the store, as ``status --format json`` carries it: throttle cuts
    in force, evolved columns, ingest manifests and the latest load of each table."""
    state = plane.state()
    return {
        "throttle_cuts": [
            {
                "system": c.system,
                "factor": c.factor,
                "since": iso_utc(c.since),
                "until": iso_utc(c.until),
                "reason": c.reason,
            }
            for c in state.throttle_cuts()
            if c.in_force(now)
        ],
        "evolved_schemas": [
            {"source": source, "added_columns": [c.name for c in columns]}
            for source, columns in state.evolved().items()
        ],
        "ingest_manifests": [
            {
                "source": m.source,
                "partition": m.partition,
                "objects": m.objects,
                "last_ingested": iso_utc(m.last_ingested),
            }
            for m in state.manifests()
        ],
        "loads": [vars(load) for load in state.latest_loads()],
    }


def _print_runtime_state(state: Mapping[str, list[dict[str, Any]]]) -> None:
    for cut in state["throttle_cuts"]:
        click.echo(
            f"THROTTLED {cut['system']}  limits at {cut['factor']:g}x until {cut['until']} "
            f"(since {cut['since']}): {cut['reason']}"
        )
    for schema in state["evolved_schemas"]:
        click.echo(f"EVOLVED  source {schema['source']}: {', '.join(schema['added_columns'])}")
    for manifest in state["ingest_manifests"]:
        day = f" [{manifest['partition']}]" if manifest["partition"] else ""
        click.echo(
            f"INGESTED source {manifest['source']}{day}: {manifest['objects']} object(s), "
            f"last at {manifest['last_ingested']}"
        )
    for done in state["loads"]:
        day = f" [{done['partition']}]" if done["partition"] else ""
        click.echo(
            f"LOADED   {done['dataset']}{day} version {done['lake_version']} into "
            f"{done['warehouse_table']} ({done['mode']}, {done['rows']} rows) at "
            f"{done['loaded_at']} by run {done['run_id'][:8]}"
        )


@control.command()
@click.argument("dataset")
@click.argument("route_name", metavar="[ROUTE]", required=False)
@click.option("--reason", default=None, help="Why (kept in the audit log); needed to change.")
@click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
@project_option
def route(
    dataset: str, route_name: str | None, reason: str | None, changed_by: str | None, project: Path
) -> None:
    """List DATASET's routes (primary, source replicas, alternate producers) and the one in
    force; with ROUTE, read DATASET along it from the next step on ("primary" goes back)."""

    catalog = load(project)
    if dataset not in catalog.datasets:
        fail(f"no dataset named {dataset!r} in this project")
    options = routes(catalog, catalog.datasets[dataset])
    plane = open_plane(project)
    if route_name is not None:
        if route_name not in {r.name for r in options}:
            fail(
                f"{dataset} has no route {route_name!r}: its routes are "
                f"{', '.join(r.name for r in options)} (declare replicas in sources.yaml, "
                "alternates in datasets.yaml)"
            )
        if not reason:
            fail("say why with --reason (it is kept in the audit log)")
        who = operator(changed_by)
        override = plane.store().set_route(dataset, route_name, reason, who)
        click.echo(f"{dataset} rerouted to {route_name} by {who} at {override.changed_at}")
        return
    current, warning = plane.route(catalog, catalog.datasets[dataset])
    if warning:
        click.echo(f"warning: {warning}")
    for option in options:
        mark = "*" if option.name == current.name else " "
        click.echo(f"{mark} {option.describe()}")


def _node(catalog: Catalog, text: str, tables: bool = True) -> str:

    try:
        node = RecoveryGraph.of(catalog).parse_node(text)
    except ValueError as error:
        fail(str(error))
    if not tables and ":" not in node:
        fail(
            f"{node} is a table: switch it off with `medallion control disable {node}`; "
            "mark down a source:NAME, replica:NAME or system:NAME"
        )
    return node


def _recover(
    catalog: Catalog,
    plane: ControlPlane,
    also_down: Mapping[str, str],
    reason: str,
    who: str,
    apply: bool,
) -> None:
    """Plan (and with ``apply`` set) the routes around what is down; say what moved."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.recovery.recover import recover

    plan = recover(catalog, plane.store(), also_down, reason=reason, changed_by=who, apply=apply)
    verb = "reroute" if not apply else "rerouted"
    click.echo(f"down: {', '.join(plan.down) or 'nothing'}")
    for reroute in plan.reroutes:
        click.echo(f"{verb} {reroute.describe()}")
    if not plan.reroutes:
        click.echo("every table keeps its route")
    if plan.unreachable:
        click.echo(f"no available path produces: {', '.join(plan.unreachable)}")


@control.command()
@click.argument("node")
@click.option("--reason", required=True, help="Why (kept in the audit log).")
@click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
@project_option
def down(node: str, reason: str, changed_by: str | None, project: Path) -> None:
    """Mark NODE (source:NAME, replica:NAME or system:NAME) down, and route every table around
    it along its cheapest available path (audited with the path taken)."""

    catalog = load(project)
    name = _node(catalog, node, tables=False)
    who = operator(changed_by)
    plane = open_plane(project)
    marked = DownNodes(plane.store()).mark(name, reason, who)
    click.echo(f"{name} marked down by {who} at {marked.changed_at}: {reason}")
    _recover(catalog, plane, {}, f"{name} marked down: {reason}", who, apply=True)


@control.command()
@click.argument("node")
@click.option("--reason", required=True, help="Why (kept in the audit log).")
@click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
@project_option
def up(node: str, reason: str, changed_by: str | None, project: Path) -> None:
    """Mark NODE up again: the tables recovery routed around it go back to their primary where
    nothing else on it is down."""

    catalog = load(project)
    name = _node(catalog, node, tables=False)
    who = operator(changed_by)
    plane = open_plane(project)
    if not DownNodes(plane.store()).clear(name, reason, who):
        click.echo(f"{name} was not marked down")
    else:
        click.echo(f"{name} marked up by {who}: {reason}")
    _recover(catalog, plane, {}, f"{name} marked up: {reason}", who, apply=True)


@control.command()
@click.option(
    "--down",
    "down_given",
    multiple=True,
    metavar="NODE",
    help="Also down for this decision: a table, source:NAME, replica:NAME or system:NAME.",
)
@click.option("--dry-run", is_flag=True, help="Say what would be rerouted; change nothing.")
@click.option("--reason", default=None, help="Why (kept in the audit log); needed to change.")
@click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
@project_option
def recover(
    down_given: tuple[str, ...],
    dry_run: bool,
    reason: str | None,
    changed_by: str | None,
    project: Path,
) -> None:
    """Route every table around what is down (marked down, switched off, and --down) along its
    cheapest available path, however many hops up the broken node is; tables rerouted around
    nodes that are up again go back to their primary."""
    catalog = load(project)
    given = {_node(catalog, n): "given with --down" for n in down_given}
    if not dry_run and not reason:
        fail("say why with --reason (it is kept in the audit log), or look first with --dry-run")
    who = operator(changed_by)
    _recover(catalog, open_plane(project), given, reason or "", who, apply=not dry_run)
