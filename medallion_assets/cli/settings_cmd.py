"""``medallion settings``: every variable the runtime reads, its value in force, default and
meaning; ``--format markdown`` prints the table docs/reference/settings.md documents them with."""

from __future__ import annotations

import json
from pathlib import Path

import click

from medallion_assets.cli.common import project_option, settings_for
from medallion_assets.credentials import MASK, mask_credentials
from medallion_assets.settings import MedallionSettings, documented, is_secret


@click.command("settings")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="text/json: the values in force (passwords masked); markdown: the table of variables, "
    "defaults and meanings.",
)
@project_option
def settings(fmt: str, project: Path) -> None:
    """The settings in force for the project: each variable's value (derived defaults
    computed, passwords masked), whether the environment set it, its default and meaning."""
    if fmt == "markdown":
        click.echo(markdown_table(), nl=False)
        return
    rows = values_in_force(settings_for(project))
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo(text_table(rows), nl=False)


def markdown_table() -> str:
    """The table of variables, defaults and meanings, as the README has it."""
    lines = ["| variable | default | meaning |", "|---|---|---|"]
    lines += [f"| `{d.variable}` | {d.default} | {d.meaning} |" for d in documented()]
    return "\n".join(lines) + "\n"


def values_in_force(settings: MedallionSettings) -> dict[str, dict[str, str | bool | None]]:
    """variable -> its value in force (masked), whether it was set, its default and meaning."""
    values = settings.in_force()
    rows: dict[str, dict[str, str | bool | None]] = {}
    for doc in documented():
        value = values[doc.variable]
        if value is not None:
            secret = is_secret(doc.variable)
            value = MASK if secret else mask_credentials(value, settings.secrets)
        rows[doc.variable] = {
            "value": value,
            "set": settings.is_set(doc.variable),
            "default": doc.default.replace("`", ""),
            "meaning": doc.meaning.replace("`", ""),
        }
    return rows


def text_table(rows: dict[str, dict[str, str | bool | None]]) -> str:
    """One line per variable: name, value in force (``unset``), and ``(default)`` where the
    environment did not set it."""
    width = max(len(name) for name in rows)
    lines = []
    for name, row in rows.items():
        value = "unset" if row["value"] is None else str(row["value"])
        origin = "" if row["set"] else "  (default)"
        lines.append(f"{name:<{width}}  {value}{origin}")
    return "\n".join(lines) + "\n"
