"""``medallion recovery-paths``: every way to produce a table and the one taken with nodes down."""

from __future__ import annotations

import json
from pathlib import Path

import click

from medallion_assets.cli.common import fail, load, project_option
from medallion_assets.recovery.paths import Listing, RecoveryGraph
from medallion_assets.recovery.plan import down_nodes


@click.command("recovery-paths")
@click.argument("table")
@click.option(
    "--down",
    "down",
    multiple=True,
    metavar="NODE",
    help="A node that is unavailable: a table, source:NAME, replica:NAME or system:NAME "
    "(repeat for several).",
)
@click.option(
    "--what-if",
    is_flag=True,
    help="Only the --down nodes: leave out what is down now (marked down, switched off).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@project_option
def recovery_paths(
    table: str, down: tuple[str, ...], what_if: bool, fmt: str, project: Path
) -> None:
    """Every path that can produce TABLE, with its cost and whether it is available, the
    cheapest available one marked as chosen.

    A path is one route for TABLE (its primary, a replica of its raw source or an alternate
    producer) and one for every table that route reads, recursively; its cost adds the routes'
    costs. With --down, the paths through those nodes are unavailable and the cheapest of the
    rest is chosen (what a reroute around them takes). The nodes down now (marked down by an
    operator or by healing, switched off by the kill switch) count as down too, unless
    --what-if. Exits 1 when no path is available.
    """
    catalog = load(project)
    graph = RecoveryGraph.of(catalog)
    try:
        given = down_nodes(graph, down)
    except ValueError as error:
        fail(str(error))
    now: dict[str, str] = {}
    if not what_if:
        # the control store (SQLAlchemy): loaded only by the commands that use it
        from medallion_assets.cli.control_cmd import open_plane
        from medallion_assets.recovery.recover import down_now

        plane = open_plane(project)
        now = down_now(catalog, plane.store(), plane.flags())
    try:
        listing = graph.listing(table, given | set(now))
    except ValueError as error:
        fail(str(error))
    down = tuple(sorted(given | set(now)))
    if fmt == "json":
        click.echo(json.dumps({**listing.as_dict(), "down": list(down)}, indent=2))
    else:
        click.echo(_text(listing, list(down)), nl=False)
    if listing.chosen is None:
        raise SystemExit(1)


def _text(listing: Listing, down: list[str]) -> str:
    lines = [f"{listing.table}: {len(listing.paths)} path(s)"]
    lines[0] += f", with {', '.join(down)} down" if down else ""
    for number, path in enumerate(listing.paths, 1):
        mark = "chosen" if listing.chosen is not None and path == listing.chosen else ""
        state = "available" if path.available else f"down: {', '.join(path.down)}"
        lines.append(f"  {number}. cost {path.cost:g}  {state}  {mark}".rstrip())
        lines += [f"       {t} via {r}" for t, r in path.routes]
    if listing.truncated:
        lines.append(f"  (the first {len(listing.paths)} only)")
    if listing.chosen is None:
        lines.append("  no path is available: nothing can produce it until a node is back")
    return "\n".join(lines) + "\n"
