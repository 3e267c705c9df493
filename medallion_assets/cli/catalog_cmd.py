"""``medallion catalog validate|show``."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from medallion_assets.catalog.describe import describe
from medallion_assets.cli.common import load, problems, project_option, settings_for
from medallion_assets.cli.published import published_type_issues


@click.group()
def catalog() -> None:
    """Validate the metadata and SQL, or print the fully derived catalog."""


@catalog.command()
@project_option
def validate(project: Path) -> None:
    """Check every metadata file and SQL file; list every problem and exit 2 if any.

    With a local lake that holds tables, each table's column types are also checked against
    the published ones (a changed type needs a schema rule's allow_type_changes)."""
    loaded = load(project)
    changed, note = published_type_issues(loaded, settings_for(project))
    if changed:
        problems(f"the project at {project} would change published tables", changed)
    if note:
        click.echo(note, err=True)
    click.echo(
        f"ok: {len(loaded.datasets)} datasets, {len(loaded.sources)} sources, "
        f"{len(loaded.exposures)} exposures, {len(loaded.lineage.column_edges)} column edges"
    )


@catalog.command()
@click.option(
    "--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True
)
@project_option
def show(fmt: str, project: Path) -> None:
    """Print the derived catalog: datasets, columns, checks, systems, targets, lineage edges."""
    data = describe(load(project))
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(yaml.safe_dump(data, sort_keys=False, width=100), nl=False)


@catalog.command()
@project_option
def export(project: Path) -> None:
    """Write the derived catalog into the control store's relational tables (pipelines,
    stages, sources, targets, validation_rules, control_flags, retry_policies,
    healing_actions, dataset_lineage, profiles, profile_settings, pipeline_profiles,
    throttles, dataset_recovery_paths), replacing the previous export in one transaction."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.control_plane import ControlPlane
    from medallion_assets.export.rows import export_rows

    loaded = load(project)
    plane = ControlPlane.of(settings_for(project))
    # A store that cannot be used is one line and exit 2, from the `medallion` group.
    counts = plane.store().replace_catalog(export_rows(loaded, plane))
    click.echo(f"exported to {plane.store().masked(plane.url)}:")
    for table, count in counts.items():
        click.echo(f"  {table:<22} {count:>6} row(s)")
