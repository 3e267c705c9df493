"""``medallion lineage TABLE`` and ``medallion lineage scan DIR``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from medallion_assets.catalog.errors import visible
from medallion_assets.cli.common import fail, known_table, load, project_option
from medallion_assets.lineage.graph import LineageGraph, Node
from medallion_assets.lineage.render import RENDERERS, LineageView, render_tree, view
from medallion_assets.lineage.scan import ScanResult, scan_directory


class _TableOrSubcommand(click.Group):
    """``lineage scan DIR`` is a subcommand; anything else is ``lineage TABLE`` (the hidden
    default command, which the command reference documents as ``lineage``)."""

    default_command = "show"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        wants_help = "--help" in args or "-h" in args
        if args and args[0] not in self.commands and not (args[0].startswith("-") and wants_help):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


@click.group(cls=_TableOrSubcommand)
def lineage() -> None:
    """Lineage of a project table (TABLE), or of any folder of SQL files (scan DIR).

    \b
    medallion lineage silver.orders_usd --upstream --depth 2 --columns
    medallion lineage scan ./queries --dialect duckdb --format json
    """


@lineage.command("show", hidden=True)
@click.argument("table")
@click.option("--upstream", "direction", flag_value="upstream", help="Only what TABLE reads.")
@click.option("--downstream", "direction", flag_value="downstream", help="Only what reads TABLE.")
@click.option("--depth", type=click.IntRange(min=1), default=None, help="Stop after N hops.")
@click.option("--columns", is_flag=True, help="Show column lineage of every table shown.")
@click.option("--format", "fmt", type=click.Choice(sorted(RENDERERS)), default="tree")
@project_option
@known_table
def show(
    table: str, direction: str | None, depth: int | None, columns: bool, fmt: str, project: Path
) -> None:
    catalog = load(project)
    v = view(catalog.lineage, table, direction or "both", depth, columns)
    if columns:
        unresolved = tuple(
            {"column": f"{d.name}.{c.column}", "reason": c.unresolved}
            for d in catalog.datasets.values()
            if d.name in v.depths
            for c in d.columns
            if c.unresolved
        )
        v = LineageView(v.root, v.direction, v.nodes, v.depths, v.edges, v.column_edges, unresolved)
    click.echo(RENDERERS[fmt](v), nl=False)


@lineage.command("scan")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--dialect", default="spark", show_default=True, help="Dialect the SQL is written in."
)
@click.option("--columns", is_flag=True, help="Include column lineage.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "tree", "mermaid", "dot"]),
    default="json",
    show_default=True,
)
@click.option(
    "--schema",
    "schema_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML/JSON {table: {column: type}} of the tables read, for * expansion.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Reuse parse results from this folder.",
)
@click.option(
    "--fail-on-error",
    is_flag=True,
    help="Exit 1 when any file could not be analysed (by default such files are listed).",
)
def scan(
    directory: Path,
    dialect: str,
    columns: bool,
    fmt: str,
    schema_file: Path | None,
    cache_dir: Path | None,
    fail_on_error: bool,
) -> None:
    """Lineage of every .sql file under DIRECTORY; a bare SELECT writes its file stem.

    A file may be a script or a stored procedure: each statement that writes a table is traced
    as a part of its own (load.sql#3: its third statement), after the temporary views and
    variables before it; DROP, DELETE, ALTER, TRUNCATE, CALL and dynamic SQL and the like are
    passed over, and so is a file of nothing else ("passed_over"); a CREATE TABLE's declared
    columns name a later INSERT's. COPY, UNLOAD and INSERT
    OVERWRITE DIRECTORY read or write files: a path is a node named as written.

    In a dbt project (a dbt_project.yml in DIRECTORY or above it) each model is rendered by
    Jinja as dbt parses it, with the project's macros and its installed packages'; every
    ref() and source() it calls is an input. A model whose tables may not all be traced (a
    macro of a package not installed, a model Jinja cannot render) is listed under
    "incomplete" with the reason.

    A file that cannot be analysed is listed under "errors" (JSON) or on stderr and the scan
    goes on. Exits 0, or 1 with --fail-on-error when a file has an error, or 2 when the files'
    tables form a cycle.
    """
    schema = _read_schema(schema_file) if schema_file else None
    try:
        result = scan_directory(
            directory, dialect, columns=columns, schema=schema, cache_dir=cache_dir
        )
    except ValueError as error:
        fail(str(error))
    if fmt == "json":
        data = result.as_dict()
        if not columns:
            data.pop("column_edges")
            data.pop("unresolved")
        click.echo(json.dumps(data, indent=2))
    else:
        v = _scan_view(result, columns)
        click.echo(render_tree(v) if fmt == "tree" else RENDERERS[fmt](v), nl=False)
        _echo_errors(result)
    if result.cycles:
        sys.exit(2)
    if fail_on_error and result.errors:
        sys.exit(1)


def _echo_errors(result: ScanResult) -> None:
    """The files that could not be analysed, on stderr, so stdout stays a valid graph."""
    if result.passed:
        shown = ", ".join(result.passed[:5]) + (" ..." if len(result.passed) > 5 else "")
        click.echo(
            visible(f"{len(result.passed)} file(s) move no data, passed over: {shown}"), err=True
        )
    for file, reason in result.incomplete:
        click.echo(visible(f"not traced whole: {file}: {reason}"), err=True)
    if not result.errors:
        return
    click.echo(f"{len(result.errors)} error(s):", err=True)
    for error in result.errors:
        kept = " (its table edges are shown)" if error.stage == "columns" else ""
        click.echo(visible(f"error: {error.file}: {error.message}{kept}"), err=True)


def _read_schema(path: Path) -> dict[str, dict[str, str]]:
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        fail(f"{path}: not valid YAML/JSON: {error}")
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        fail(f"{path}: expected a mapping of table -> {{column: type}}")
    return {
        str(t).lower(): {str(c).lower(): str(ty) for c, ty in cols.items()}
        for t, cols in data.items()
    }


def _scan_view(result: ScanResult, columns: bool) -> LineageView:
    targets = {fl.target for fl in result.files.values()}
    column_names: dict[str, list[str]] = {}
    for fl in result.files.values():
        column_names[fl.target] = [c.column for c in fl.columns or ()]
    nodes = [
        Node(
            n,
            "dataset" if n in targets else "source",
            # A file path (COPY, UNLOAD, a directory, parquet.`path`) is files, not a table.
            "files" if "/" in n else "table" if n in targets else "source",
            columns=tuple(column_names.get(n, ())),
        )
        for n in result.nodes
    ]
    graph = LineageGraph(nodes, result.edges, result.column_edges)
    return LineageView(
        None,
        "all",
        tuple(nodes),
        {n.id: 0 for n in nodes},
        result.edges,
        graph.column_edges if columns else None,
        result.unresolved,
    )


@lineage.command("export")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["openlineage"]),
    default="openlineage",
    help="openlineage: one design-time JobEvent per table (inputs, outputs, column lineage).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the events here, one JSON object per line (default: standard output).",
)
@click.option(
    "--send",
    is_flag=True,
    help="Also send them through OpenLineage's own configuration (OPENLINEAGE_URL, "
    "openlineage.yml, ...), e.g. to Marquez or DataHub.",
)
@project_option
def export(fmt: str, out: Path | None, send: bool, project: Path) -> None:
    """The project's lineage before anything runs, for Marquez or DataHub.

    \b
    medallion lineage export --format openlineage --out lineage.ndjson
    OPENLINEAGE_URL=http://marquez:5000 medallion lineage export --send --out /dev/null
    """

    # the OpenLineage client: loaded only when OpenLineage is on
    from openlineage.client.serde import Serde

    from medallion_assets.cli.common import settings_for
    from medallion_assets.io.openlineage import LineageEmitter, configured, job_namespace
    from medallion_assets.lake.catalog import LakeCatalog
    from medallion_assets.openlineage.events import Naming, static_events
    from medallion_assets.openlineage.events import warehouse_naming as warehouse

    catalog = load(project)
    settings = settings_for(project)
    namespace, prefix = warehouse(settings.effective_warehouse_url)
    naming = Naming(
        job_namespace(),
        LakeCatalog.of(settings).warehouse,
        namespace,
        prefix,
    )
    events = static_events(catalog, naming)
    lines = "".join(Serde.to_json(event) + "\n" for event in events)
    if out is None:
        click.echo(lines, nl=False)
    else:
        out.write_text(lines)
        click.echo(f"{len(events)} OpenLineage job events written to {out}", err=True)
    if send:
        if not configured():
            fail(
                "--send: OpenLineage is not configured; set OPENLINEAGE_URL (or OPENLINEAGE_CONFIG)"
            )
        sender = LineageEmitter()
        problems: list[str] = []
        sent = sum(sender.emit(event, warn=problems.append) for event in events)
        for problem in problems[:5]:
            click.echo(f"warning: {problem}", err=True)
        click.echo(f"{sent} of {len(events)} events sent", err=True)
        if sent < len(events):
            sys.exit(1)
