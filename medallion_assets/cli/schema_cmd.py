"""``medallion control schema SOURCE [--revert [COLUMN ...] --reason TEXT]``: a source's
declared and evolved columns, and taking evolved ones back (audited)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medallion_assets.catalog import Catalog
from medallion_assets.cli.common import fail, load, operator, project_option
from medallion_assets.cli.control_cmd import format_option, open_plane
from medallion_assets.control.state import EvolvedColumn
from medallion_assets.control.store import iso_utc
from medallion_assets.runtime.ingest.raw_files import column_name_problem

if TYPE_CHECKING:
    from medallion_assets.control.state import RuntimeState


@click.command()
@click.argument("source_name", metavar="SOURCE")
@click.argument("columns", nargs=-1, metavar="[COLUMN ...]")
@click.option("--revert", is_flag=True, help="Remove the named evolved columns (all if none).")
@click.option("--reason", default=None, help="Why (kept in the audit log); needed to revert.")
@click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
@format_option
@project_option
def schema(
    source_name: str,
    columns: tuple[str, ...],
    revert: bool,
    reason: str | None,
    changed_by: str | None,
    fmt: str,
    project: Path,
) -> None:
    """SOURCE's declared columns and the ones evolve_schema added (when, by which run, from
    which files); with --revert, remove evolved columns: the source's bronze tables are rebuilt
    without them on their next run."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.runtime.ingest.schema_drift import read_evolved

    catalog = load(project)
    if source_name not in catalog.sources:
        known = ", ".join(sorted(catalog.sources)) or "none"
        fail(f"no source named {source_name!r} in this project (sources: {known})")
    state = open_plane(project).state()
    if revert:
        _revert(catalog, state, source_name, columns, reason, changed_by)
        return
    if columns:
        fail("name columns only with --revert; without it the command lists the schema")
    evolved = read_evolved(state, source_name)
    if fmt == "json":
        click.echo(json.dumps(_as_json(catalog, source_name, evolved), indent=2))
        return
    _print(catalog, source_name, evolved)


def _revert(
    catalog: Catalog,
    state: RuntimeState,
    source_name: str,
    columns: tuple[str, ...],
    reason: str | None,
    changed_by: str | None,
) -> None:
    """Remove the evolved columns; the control store audits it in the same transaction."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.runtime.ingest.schema_drift import read_evolved, revert

    if not reason:
        fail("say why with --reason (it is kept in the audit log)")
    if not read_evolved(state, source_name):
        fail(f"source {source_name} has no evolved columns: nothing to revert")
    who = operator(changed_by)
    try:
        removed = revert(state, source_name, columns or None, reason, who)
    except ValueError as error:
        fail(str(error))
    click.echo(
        f"evolved column(s) {', '.join(removed)} of source {source_name} reverted by {who}: "
        f"{reason}"
    )
    tables = ", ".join(_readers(catalog, source_name)) or "no table"
    click.echo(f"{tables} is rebuilt without them on its next run")


def _readers(catalog: Catalog, source_name: str) -> list[str]:
    return sorted(
        name
        for name, dataset in catalog.datasets.items()
        if dataset.layer == "bronze" and source_name in dict(catalog.raw_sources(dataset))
    )


def _as_json(catalog: Catalog, source_name: str, evolved: list[EvolvedColumn]) -> dict[str, object]:
    source = catalog.sources[source_name]
    return {
        "source": source_name,
        "declared": [
            {"name": c.name, "type": c.type, "nullable": c.nullable} for c in source.columns
        ],
        "evolved": [
            {
                "name": c.name,
                "type": c.type,
                "evolved_at": iso_utc(c.evolved_at),
                "run_id": c.run_id,
                "files": list(c.files),
                "ignored": column_name_problem(c.name),
            }
            for c in evolved
        ],
    }


def _print(catalog: Catalog, source_name: str, evolved: list[EvolvedColumn]) -> None:
    source = catalog.sources[source_name]
    encoding = "" if source.format == "parquet" else f", {source.encoding}"
    click.echo(
        f"source {source_name}: s3://{source.bucket}/{source.prefix} ({source.format}{encoding})"
    )
    click.echo("declared columns:")
    width = max(len(n) for n in [c.name for c in source.columns] + [c.name for c in evolved])
    for column in source.columns:
        null = "" if column.nullable else "  not null"
        click.echo(f"  {column.name:<{width}}  {column.type}{null}")
    if not evolved:
        click.echo("evolved columns: none")
        return
    click.echo("evolved columns (nullable, added by evolve_schema):")
    for c in evolved:
        run = f" by run {c.run_id[:8]}" if c.run_id else ""
        files = f" from {', '.join(c.files[:3])}" if c.files else ""
        problem = column_name_problem(c.name)
        shown = c.name if problem is None else repr(c.name)[:60]
        click.echo(f"  {shown:<{width}}  {c.type}  added {iso_utc(c.evolved_at)}{run}{files}")
        if problem is not None:
            click.echo(f"    IGNORED by ingest: {problem}; remove it with --revert")
