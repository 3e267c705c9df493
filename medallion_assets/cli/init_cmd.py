"""``medallion init DIR``: a small project that runs green at once, copied from the template
folder shipped in the package (``medallion_assets/project_template``): one raw source with a
sample file, four tables over bronze, silver and gold, a rule set, a warehouse target and a
pipeline, each metadata file commented and pointing an editor at its JSON Schema."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from medallion_assets.catalog.starter import EXAMPLE_SQL, project_files, safe_name, write_files
from medallion_assets.cli.common import fail, settings_for


@click.command("init")
@click.argument("folder", metavar="DIR", type=click.Path(path_type=Path))
@click.option(
    "--force",
    is_flag=True,
    help="Write into a folder that is not empty: the template's files overwrite same-named "
    "ones (each is listed); no other file is touched or deleted.",
)
def init(folder: Path, force: bool) -> None:
    """Create a small working project in DIR: sample raw data, SQL and commented metadata.

    One raw source (orders, with a sample file where runs read raw data: DIR/.medallion/s3),
    four tables over bronze, silver and gold, a rule set with a blocking and a warning check,
    a gold table loaded into the embedded DuckDB warehouse and a daily pipeline. The project's
    name is DIR's folder name in lower case, letters, digits and _. `medallion run --project
    DIR` builds it at once.
    """
    if folder.exists() and not folder.is_dir():
        fail(f"{folder} is a file: give a new or empty folder to create the project in")
    root = folder.resolve()
    settings = settings_for(root)
    raw_root = settings.s3_root.resolve()
    name = safe_name(root.name)
    files = project_files(root, raw_root, name)
    existing = [f.destination for f in files if f.destination.exists()]
    if not force:
        refuse_to_overwrite(folder, existing)
    try:
        write_files(files)
    except OSError as error:
        fail(f"could not write the project into {folder}: {error}")

    def shown(path: Path) -> str:
        return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)

    click.echo(f"wrote project {name} into {root}:")
    for file in files:
        notes = [
            *(["sample raw data"] if file.destination.is_relative_to(raw_root) else []),
            *(["overwritten"] if file.destination in existing else []),
        ]
        click.echo(f"  {shown(file.destination)}" + (f"  ({', '.join(notes)})" if notes else ""))
    if existing:
        click.echo(f"--force: {len(existing)} existing file(s) overwritten; no other was touched")
    if settings.uses_s3_api:
        click.echo(
            "note: runs read raw data from the S3 API (MEDALLION_S3_ENDPOINT / MEDALLION_S3), "
            f"not from {shown(raw_root)}: copy the sample to the bucket in metadata/sources.yaml"
        )
    click.echo(next_steps(folder))


def refuse_to_overwrite(folder: Path, existing: list[Path]) -> None:
    """Exit 2 in one line, having written nothing, when ``folder`` holds anything (or a file
    of the template exists elsewhere, e.g. the sample under $MEDALLION_S3_LOCAL_ROOT)."""
    held = sorted(folder.iterdir()) if folder.is_dir() else []
    if held:
        shown = ", ".join(p.name + ("/" if p.is_dir() else "") for p in held[:3])
        more = f" and {len(held) - 3} more" if len(held) > 3 else ""
        fail(
            f"{folder} is not empty (it holds {shown}{more}): give a new or empty folder, or "
            "add --force to write the project's files beside yours (same-named ones are "
            "overwritten, nothing is deleted)"
        )
    if existing:
        fail(f"{existing[0]} already exists: add --force to overwrite it")


def next_steps(folder: Path) -> str:
    """The three things to do next, with the folder as the user typed it."""
    project = shlex.quote(str(folder))
    return (
        "next:\n"
        f"  medallion run --project {project}   # build its 4 tables and load the warehouse\n"
        f"  medallion dev --project {project}   # the asset graph, runs and checks in the UI\n"
        f"  edit {shlex.quote(str(folder / EXAMPLE_SQL))}, then run again: only the changed "
        "table and what reads it are rebuilt"
    )
