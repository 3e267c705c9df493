"""What every command shares: ``--project``, loading the catalog, and clear failures."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

from medallion_assets.catalog import Catalog, CatalogError, load_catalog

project_option = click.option(
    "--project",
    "project",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default="current folder",
    help="Project folder holding sql/ and metadata/.",
)


def load(project: Path) -> Catalog:
    """Load the catalog or exit 2 listing every problem."""
    try:
        return load_catalog(project)
    except CatalogError as error:
        does_not_load(project, error)


def does_not_load(project: Path, error: CatalogError) -> NoReturn:
    """Print every problem of a project that does not load, and exit 2."""
    click.echo(f"error: the project at {project} does not load:", err=True)
    for issue in error.issues:
        click.echo(f"  {issue}", err=True)
    sys.exit(2)


def fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def known_table(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn an unknown table or column (KeyError from the graph) into a one-line error."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except KeyError as error:
            fail(str(error.args[0]) if error.args else "unknown table")

    return wrapper
