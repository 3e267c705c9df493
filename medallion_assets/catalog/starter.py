"""The starter project ``medallion init DIR`` and ``dg scaffold defs
medallion_assets.MedallionProject NAME`` write: the template folder shipped in the package
(``medallion_assets/project_template``) with the project's name filled in, each metadata file
pointing an editor at its JSON Schema, and the raw sample where runs read raw data. Pure."""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from medallion_assets.catalog.reference import SCHEMAS

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


def write_files(files: list[ProjectFile]) -> None:
    """Write each file, making its folders (``OSError`` when one cannot be written)."""
    for file in files:
        file.destination.parent.mkdir(parents=True, exist_ok=True)
        file.destination.write_bytes(file.content)


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
