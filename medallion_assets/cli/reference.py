"""The references of the ``medallion`` command (from its click commands: their help and
options) and of its settings (the environment variables ``MedallionSettings`` reads), so they
cannot drift from what the command accepts.

    python -m medallion_assets.cli.reference docs/reference

writes ``cli.md`` and ``settings.md`` there; a test fails when a file in the repository is not
what this generates.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

from medallion_assets.cli import cli
from medallion_assets.cli.settings_cmd import markdown_table

HEADER = (
    "# `medallion` command reference\n\n"
    "Every command and option, as `medallion COMMAND --help` prints it. Generated from the "
    "commands (`python -m medallion_assets.cli.reference docs/reference`): do not edit by "
    "hand.\n"
)
SETTINGS_HEADER = (
    "# Settings reference\n\n"
    "Every environment variable the runtime reads, its default and meaning; `medallion "
    "settings` shows the values in force (passwords masked). Generated (`python -m "
    "medallion_assets.cli.reference docs/reference`): do not edit by hand.\n\n"
)


def cli_reference() -> str:

    parts = [HEADER]
    # The group's own context settings (its -h), as the installed command has them.
    settings = {"terminal_width": 100, "max_content_width": 100, **cli.context_settings}
    root = click.Context(cli, info_name="medallion", **settings)
    parts.append(f"\n## `medallion`\n\n```text\n{cli.get_help(root)}\n```")
    for name, context in _commands(cli, root):
        parts.append(f"\n## `{name}`\n\n```text\n{context.command.get_help(context)}\n```")
    return "\n".join(parts) + "\n"


def settings_reference() -> str:

    return SETTINGS_HEADER + markdown_table()


def _commands(group: click.Group, parent: click.Context) -> Iterator[tuple[str, click.Context]]:
    for name in sorted(group.list_commands(parent)):
        command = group.get_command(parent, name)
        if command is None or command.hidden:
            continue
        context = click.Context(command, info_name=name, parent=parent)
        yield context.command_path, context
        if isinstance(command, click.Group):
            default = getattr(command, "default_command", None)
            if default is not None:  # `lineage TABLE`: the group's own hidden command
                own = click.Context(command.commands[default], info_name=name, parent=parent)
                arguments = " ".join(
                    p.human_readable_name
                    for p in own.command.params
                    if isinstance(p, click.Argument)
                )
                yield f"{own.command_path} {arguments}", own
            yield from _commands(command, context)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m medallion_assets.cli.reference FOLDER", file=sys.stderr)
        return 2
    folder = Path(argv[0])
    (folder / "cli.md").write_text(cli_reference())
    (folder / "settings.md").write_text(settings_reference())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
