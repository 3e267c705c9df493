"""``medallion init DIR``: a small project that runs green at once, copied from the template
folder shipped in the package (``medallion_assets/project_template``): one raw source with a
sample file, four tables over bronze, silver and gold, a rule set, a warehouse target and a
pipeline, each metadata file commented and pointing an editor at its JSON Schema."""

from __future__ import annotations

import os
import re
import shlex
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import click

from medallion_assets.catalog.reference import SCHEMAS
from medallion_assets.cli.common import fail, settings_for

TEMPLATE = Path(__file__).resolve().parent.parent / "project_template"
# The template's folder standing in for S3 (<bucket>/<key>): written where the runtime reads
# raw data on the embedded defaults, the settings' `s3_root` (<project>/.medallion/s3).
RAW_FOLDER = "s3"
NAME_TOKEN = "__project__"  # replaced by the project's name in the template's text files
EXAMPLE_SQL = "sql/gold/daily_revenue.sql"  # the file the next steps suggest editing


@dataclass(frozen=True)
class ProjectFile:
    """One file ``init`` writes: where, and its bytes."""

    destination: Path
    content: bytes


def safe_name(folder: str) -> str:
    """The project's name for a folder's name: lower-case letters, digits and ``_``.

    >>> safe_name("My Shop-2026")
    'my_shop_2026'
    >>> safe_name("Café Données")
    'cafe_donnees'
    >>> safe_name("---")
    'project'
    """
    ascii_name = unicodedata.normalize("NFKD", folder).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_") or "project"


def schema_header(destination: Path) -> str:
    """The first line of a metadata file: ``# yaml-language-server: $schema=<schema>``.

    The schema is the installed package's own file (``catalog/schemas/<stem>.schema.json``),
    named by its path relative to the YAML file, which yaml-language-server (VS Code's YAML
    extension and others) resolves from the file's folder. Relative rather than an absolute
    ``file://`` URL: a repository holding both the project and its ``.venv`` can then be moved
    or cloned elsewhere, and the committed files do not hold one machine's absolute paths. Where
    no relative path exists (another drive on Windows), the absolute URL.
    """
    schema = SCHEMAS / f"{destination.stem}.schema.json"
    try:
        where = Path(os.path.relpath(schema, destination.parent.resolve())).as_posix()
    except ValueError:
        where = schema.as_uri()
    return f"# yaml-language-server: $schema={where}\n"


def project_files(root: Path, raw_root: Path, name: str) -> list[ProjectFile]:
    """Every file of the template, at its place under ``root`` (the raw sample under
    ``raw_root``, the folder standing in for S3), the project's name filled in."""
    files, raw = [], []
    for source in sorted(p for p in TEMPLATE.rglob("*") if p.is_file()):
        relative = source.relative_to(TEMPLATE)
        if relative.parts[0] == RAW_FOLDER:
            raw.append(ProjectFile(raw_root.joinpath(*relative.parts[1:]), source.read_bytes()))
            continue
        destination = root / relative
        content = source.read_text(encoding="utf-8").replace(NAME_TOKEN, name)
        if relative.parts[0] == "metadata" and source.suffix == ".yaml":
            content = schema_header(destination) + content
        files.append(ProjectFile(destination, content.encode("utf-8")))
    return files + raw  # the project's own files first, then its sample data


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
        for file in files:
            file.destination.parent.mkdir(parents=True, exist_ok=True)
            file.destination.write_bytes(file.content)
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
