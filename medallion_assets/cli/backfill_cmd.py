"""``medallion backfill``: what a backfill would rebuild, then launch it on the instance."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from medallion_assets.backfill.plan import BackfillPreview, parse_range, preview_backfill
from medallion_assets.catalog import Catalog
from medallion_assets.catalog.selection import select_tables
from medallion_assets.cli.common import (
    checked_before_spark,
    fail,
    load,
    project_option,
    settings_for,
)
from medallion_assets.cli.simulate_cmd import durations_for
from medallion_assets.lake import Lake


@click.command("backfill")
@click.option(
    "--select",
    "selection",
    required=True,
    metavar="SELECTION",
    help="The tables to rebuild, comma-separated: a table, a glob (silver.*), layer:NAME, "
    "tag:NAME or pipeline:NAME. Everything downstream of them is rebuilt too.",
)
@click.option(
    "--partitions",
    "days",
    required=True,
    metavar="FROM...TO",
    help="The days (ISO, both included) of the daily-partitioned tables.",
)
@click.option("--preview", is_flag=True, help="Say what it would do; launch nothing.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@project_option
def backfill(selection: str, days: str, preview: bool, fmt: str, project: Path) -> None:
    """Rebuild TABLEs and everything downstream over days FROM...TO: first what it touches
    (tables x days, warehouse rows reloaded, exposures, simulated time), then, without
    --preview, one Dagster asset backfill on the project instance: `dagster dev` (its daemon)
    runs it a day per run and shows it under Backfills."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.cli.control_cmd import open_plane

    catalog = load(project)
    settings = settings_for(project)
    try:
        tables = select_tables(catalog, selection)
        start, end = parse_range(days)
        past = durations_for(catalog, project, Lake.of(settings))
        store = open_plane(project).store()
        loaded = {(r.dataset, r.partition or ""): r.rows for r in store.state.latest_loads()}
        found = preview_backfill(
            catalog,
            tables,
            start,
            end,
            loaded,
            past.durations,
            settings.workers,
            max_runs=settings.run_slots(),
            run_start_s=past.run_start_s,
        )
    except ValueError as error:
        fail(str(error))
    if not found.tables:
        fail(f"nothing to rebuild: no table of {selection} has days in {days}")
    backfill_id = None
    if not preview:
        checked_before_spark(project, settings)  # the daemon's runs would each fail the same way
        backfill_id = launch(catalog, project, selection, found)
    if fmt == "json":
        data = found.as_dict()
        data["backfill_id"] = backfill_id
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(_text(found), nl=False)
    if backfill_id is not None:
        # Dagster: loaded only by the commands that run it (`medallion --help` stays quick)
        from medallion_assets.adapters.instance import dagster_home

        click.echo(
            f"\nlaunched backfill {backfill_id} on the instance at {dagster_home(project)}; the "
            "Dagster daemon runs it (`dagster dev`, then Overview > Backfills, or "
            f"http://127.0.0.1:3000/overview/backfills/{backfill_id})"
        )


def launch(catalog: Catalog, project: Path, selection: str, found: BackfillPreview) -> str:
    # Dagster: loaded only by the commands that run it (`medallion --help` stays quick)
    from medallion_assets.adapters.backfill import launch_backfill
    from medallion_assets.profiles.priority import request_priority

    tables = [t for t, _ in found.tables]
    priority = request_priority(catalog, tables, None, {})
    title = backfill_title(selection, f"{found.start}...{found.end}")
    return launch_backfill(catalog, project, tables, found.partitions, priority.tags(), title)


TITLE_LENGTH = 100  # Dagster's limit on a backfill title


def backfill_title(selection: str, days: str) -> str:
    """The backfill's title in Dagster's UI: the selection as typed and the days, within
    Dagster's rules for a title (at most 100 characters, none of % * "; a glob's * shows as
    its look-alike U+2217)."""
    look_alike = {"*": "\u2217", "%": "\uff05", '"': "'"}
    typed = re.sub(r"[%*\"]", lambda m: look_alike[m.group()], selection)
    typed = " ".join(typed.split())
    room = TITLE_LENGTH - len("medallion backfill ") - len(days) - 1
    if len(typed) > room:
        typed = typed[: room - 1] + "…"
    return f"medallion backfill {typed} {days}"


def _text(found: BackfillPreview) -> str:
    lines = [
        f"backfill of {', '.join(found.selected)} over {found.start}...{found.end}: "
        f"{len(found.tables)} table(s), {found.builds} build(s)",
        "",
        "rebuilds:",
    ]
    for table, days in found.tables:
        when = f"{len(days)} day(s): {days[0]}...{days[-1]}" if days else "once (no days)"
        lines.append(f"  {table:<36} {when}")
    lines += ["", "warehouse reloads:"]
    lines += [
        f"  {r.warehouse_table:<36} {r.rows:>10,} row(s) now loaded"
        + (f" over {len(r.partitions)} day(s)" if r.partitions else "")
        for r in found.reloads
    ] or ["  none"]
    total = sum(r.rows for r in found.reloads)
    if found.reloads:
        lines.append(f"  {'total':<36} {total:>10,} row(s)")
    lines += ["", f"exposures touched: {', '.join(found.exposures) or 'none'}"]
    lines.append(f"simulated time: {found.simulated_s:,.0f} s under the active profile")
    return "\n".join(lines) + "\n"
