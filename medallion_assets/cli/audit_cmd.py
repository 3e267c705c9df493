"""``medallion audit``: the control store's audit log, filtered by table, time, run."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medallion_assets.cli.common import fail, load, project_option
from medallion_assets.cli.control_cmd import format_option, open_plane
from medallion_assets.control.store import iso_utc
from medallion_assets.kill_switch.switch import table_entities

if TYPE_CHECKING:
    pass


@click.command()
@click.option("--dataset", default=None, help="Only entries about this table and what governs it.")
@click.option("--since", default=None, help="ISO time (2026-11-21T09:00) or an age (30m, 6h, 2d).")
@click.option("--run", "run_id", default=None, help="Only entries of this Dagster run.")
@click.option("--limit", type=int, default=None, help="Only the newest N entries.")
@format_option
@project_option
def audit(
    dataset: str | None,
    since: str | None,
    run_id: str | None,
    limit: int | None,
    fmt: str,
    project: Path,
) -> None:
    """The audit log: runs, attempts, error codes, healing actions, flag changes, outcomes."""
    entities = None
    if dataset is not None:
        catalog = load(project)
        if dataset not in catalog.datasets:
            fail(f"no dataset named {dataset!r} in this project")
        entities = [f"{s}:{n}" for s, n in table_entities(catalog, dataset)]
    try:
        start = _since(since) if since else None
    except ValueError as error:
        fail(str(error))
    entries = open_plane(project).store().audit(entities, start, run_id, limit)
    if fmt == "json":
        click.echo(json.dumps([vars(e) for e in entries], indent=2, default=str))
        return
    for e in entries:
        run = f" run {e.run_id[:8]}" if e.run_id else ""
        click.echo(f"{e.at}  {e.kind:<8} {e.entity}{run}: {e.message}")
    if not entries:
        click.echo("no audit entries match")


def _since(text: str) -> str:
    """An age like ``6h`` or an ISO time -> the store's ISO UTC text."""
    age = re.fullmatch(r"(\d+)\s*([smhd])", text.strip())
    if age:
        seconds = int(age.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[age.group(2)]
        moment = time.time() - seconds
    else:
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"--since {text!r} is neither an age (30m, 6h, 2d) nor an ISO time "
                "(2026-11-21T09:00, UTC unless it has an offset)"
            ) from None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        moment = parsed.timestamp()
    return iso_utc(moment)
