"""README.md and docs/ stay true: the generated references are what their generators write,
every metadata field is explained, every link leads to a file, every `medallion` command the
pages show exists with the options they give it, and the commands in their shell blocks run.
(The README's two set-up commands are run by CI and the fresh-clone check; its tour, which
builds tables on Spark, by tests/e2e/test_pipeline.py.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from medallion_assets.catalog.metadata_files import METADATA_FILES
from medallion_assets.catalog.reference import SCHEMAS, fields, json_schemas, metadata_reference
from medallion_assets.cli import cli
from medallion_assets.cli.reference import settings_reference
from tests.conftest import copy_demo_project

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
GUIDES = [p for p in PAGES if "reference" not in p.parts]  # the references are generated
REGENERATE = "python -m medallion_assets.catalog.reference / medallion_assets.cli.reference"


def fresh_cli_reference() -> str:
    """The generator's output in a new interpreter: click keeps a command's help option from
    its first use, and a test invoking one command on its own (without the group's `-h`)
    would change what this process generates."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        subprocess.run([sys.executable, "-m", "medallion_assets.cli.reference", folder], check=True)
        return (Path(folder) / "cli.md").read_text()


@pytest.mark.parametrize(
    ("name", "generate"),
    [
        ("metadata.md", lambda: metadata_reference(REPO)),
        ("cli.md", fresh_cli_reference),
        ("settings.md", settings_reference),
    ],
)
def test_the_references_are_what_their_generators_write(name, generate):
    import difflib

    written, generated = (REPO / "docs" / "reference" / name).read_text(), generate()
    diff = "".join(difflib.unified_diff(written.splitlines(True), generated.splitlines(True)))
    assert written == generated, f"docs/reference/{name} is stale: run {REGENERATE}\n{diff}"


def test_the_json_schemas_shipped_are_what_the_models_give_and_take_the_demos_files():
    import json

    import jsonschema
    import yaml

    generated = json_schemas()
    shipped = {p.name: p.read_text() for p in SCHEMAS.glob("*.schema.json")}
    assert shipped == generated, f"stale: run {REGENERATE}"
    for name, text in generated.items():
        demo = REPO / "metadata" / name.replace(".schema.json", ".yaml")
        # as an editor's YAML 1.2 reads it: a date is text
        document = json.loads(json.dumps(yaml.safe_load(demo.read_text()), default=str))
        jsonschema.validate(document, json.loads(text))


def test_every_metadata_field_is_explained():
    unexplained = [
        f"{stem}.yaml: {path}"
        for stem, model in METADATA_FILES.items()
        for path, _kind, _default, meaning in fields(model)
        if not meaning
    ]
    assert unexplained == [], "give these fields a docstring in their model"


def test_the_readme_is_a_guide_of_at_most_250_lines_that_says_first_what_it_is():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    opening = " ".join(text.splitlines()[:10])
    assert "SQL files" in opening and "metadata" in opening and "data-platform teams" in opening


def test_every_link_of_the_pages_leads_to_a_file():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert broken == []


def shown_commands(inline: bool = True) -> list[tuple[str, str]]:
    """(page, command) for every `medallion ...` the pages show in a shell block, and inline
    (often a part of a command, with placeholders)."""
    found = []
    for page in GUIDES:
        text = page.read_text()
        name = str(page.relative_to(REPO))
        for block in re.findall(r"```(?:bash|text)?\n(.*?)```", text, re.S):
            found += [(name, line) for line in _command_lines(block)]
        if inline:
            found += [(name, part) for part in re.findall(r"`(medallion [^`]+)`", text)]
    return found


def _command_lines(block: str) -> list[str]:
    lines, heredoc = [], None
    for line in block.splitlines():
        if heredoc is not None:
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        if match := re.search(r"<<'?(\w+)'?", line):
            heredoc = match.group(1)
        if line.startswith("medallion "):
            lines.append(line.split("  #")[0].strip())
    return lines


def _resolve(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command the words name (a group's subcommand as far as they go), and the rest."""
    command: click.Command = cli
    rest = words[1:]
    while isinstance(command, click.Group) and rest:
        sub = command.get_command(click.Context(command), rest[0])
        if sub is None:  # `lineage TABLE`: the group's default command takes the words
            default = getattr(command, "default_command", None)
            if default is None:
                break
            sub, rest = command.commands[default], ["", *rest]
        command, rest = sub, rest[1:]
    return command, rest


@pytest.mark.parametrize(("page", "shown"), shown_commands())
def test_every_command_shown_exists_with_the_options_it_is_given(page, shown):
    words = shown.replace("\\|", " ").replace("|", " ").replace("[", " ").replace("]", " ")
    words = words.split()
    command, rest = _resolve(words)
    assert command is not cli or words[1].startswith("-"), f"{page}: no command {words[1]!r}"
    options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
    given = {w.split("=")[0] for w in rest if w.startswith("--")}
    assert given <= options, f"{page}: `{shown}`: no option {sorted(given - options)}"


# Commands of the pages' shell blocks that run on the demo without Spark, a server or state.
RUNNABLE = ("lineage", "impact", "catalog", "plan", "settings", "trace-pii", "recovery-paths")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    return copy_demo_project(tmp_path_factory.mktemp("docs") / "theworldshop")


@pytest.mark.parametrize(
    "shown",
    sorted(
        c
        for _, c in shown_commands(inline=False)
        if c.split()[1] in RUNNABLE
        and not re.search(r"[A-Z]{3,}|\.\.\.|\[|\|", c)  # no placeholder
        and not isinstance(_resolve(shlex.split(c))[0], click.Group)
    ),
)
def test_the_commands_shown_that_need_no_spark_run(shown, demo, monkeypatch):
    monkeypatch.setenv("MEDALLION_HOME", str(demo / ".medallion"))
    done = CliRunner().invoke(cli, [*shlex.split(shown)[1:], "--project", str(demo)])
    assert done.exit_code == 0, done.output
