"""A small project on a local lake for the tests that build its tables on Spark and Iceberg."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.lake import Lake


def small_project(folder: Path, name: str, files: Mapping[str, str]) -> tuple[Catalog, Lake]:
    """``files`` (path -> text) as the project ``name`` in ``folder/project``, with an S3
    system and Spark, and its lake in ``folder/lake``."""
    root = folder / "project"
    every = {
        "metadata/project.yaml": f"name: {name}\ndialect: spark\nowners: [team:data]\n",
        "metadata/systems.yaml": "systems:\n  s3_raw: {kind: s3}\n  spark: {kind: spark}\n",
        **files,
    }
    for path, text in every.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return load_catalog(root, use_cache=False), Lake.local(folder / "lake")
