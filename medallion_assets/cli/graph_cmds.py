"""``medallion impact``, ``split`` and ``trace-pii``: questions answered by the graph."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medallion_assets.cli.common import fail, known_table, load, project_option, settings_for
from medallion_assets.lineage.impact import ImpactReport
from medallion_assets.lineage.impact import impact as impact_of

if TYPE_CHECKING:
    from medallion_assets.checks.validation import BlockedOutput

_fmt = click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)


@click.command()
@click.argument("table")
@click.option("--column", default=None, help="Only what this column of TABLE reaches.")
@click.option(
    "--fail-on",
    type=click.Choice(["critical", "high"]),
    default=None,
    help="Exit 1 when anything impacted is at this criticality or above (for CI).",
)
@_fmt
@project_option
@known_table
def impact(table: str, column: str | None, fail_on: str | None, fmt: str, project: Path) -> None:
    """Everything downstream of TABLE, by layer, with exposures, owners and criticality.

    When the newest output of TABLE failed a blocking check and was not published, the report
    also says which checks failed, since when, which version stays current, and what
    downstream was protected from the rejected output.
    """
    catalog = load(project)
    report = impact_of(catalog.lineage, table, column)
    blocked = _blocked_outputs(project, table) if table in catalog.datasets else []
    if fmt == "json":
        click.echo(
            json.dumps({**report.as_dict(), "blocked": [b.as_dict() for b in blocked]}, indent=2)
        )
    else:
        click.echo(_impact_text(report), nl=False)
        for output in blocked:
            click.echo(_blocked_text(output, report), nl=False)
    if fail_on and report.reaches(fail_on):
        names = ", ".join(n.id for n in report.reaches(fail_on))
        click.echo(f"fail-on {fail_on}: impact reaches {names}", err=True)
        sys.exit(1)


def _impact_text(report: ImpactReport) -> str:
    start = f"{report.root}.{report.column}" if report.column else report.root
    lines = [f"impact of {start}"]
    for layer, nodes in report.by_layer().items():
        lines.append(f"  {layer}:")
        for node in nodes:
            columns = f"  columns: {', '.join(node.columns)}" if node.columns else ""
            owners = ", ".join(node.owners) or "no owner"
            lines.append(
                f"    {node.id:<40} {node.criticality:<9} depth {node.depth}  "
                f"owners: {owners}{columns}"
            )
    if not report.nodes:
        lines.append("  nothing downstream")
    lines.append(report.summary())
    return "\n".join(lines) + "\n"


def _blocked_outputs(project: Path, table: str) -> list[BlockedOutput]:
    # Spark and the lake: loaded only by the commands that use them
    from medallion_assets.checks.validation import blocked_outputs
    from medallion_assets.control_plane import ControlPlane
    from medallion_assets.lake import Lake

    settings = settings_for(project)
    ledger = ControlPlane.of(settings).store().checks
    return blocked_outputs(ledger, Lake.of(settings), table)


def _blocked_text(output: BlockedOutput, report: ImpactReport) -> str:
    where = f"{output.table}[{output.partition}]" if output.partition else output.table
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(output.rejected_at))
    lines = [
        f"BLOCKED: the newest output of {where} failed blocking checks and was not published",
        f"  rejected {when}; the output is kept for inspection in {output.staging}",
    ]
    lines += [f"  - {c.name} ({c.kind}): {c.message}" for c in output.failures]
    if output.current is None:
        lines.append("  no version of it was ever published: downstream has nothing to read")
    else:
        published = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(output.current.created_at))
        lines.append(
            f"  stays current: version {output.current.version_id} "
            f"({output.current.rows:,} rows, published {published})"
        )
    if report.nodes:
        names = ", ".join(n.id for n in report.nodes)
        lines.append(
            f"  protected: none of the {len(report.nodes)} downstream table(s) and exposure(s) "
            f"read the rejected output: {names}"
        )
    return "\n".join(lines) + "\n"


@click.command()
@click.option(
    "--sinks",
    "sink_groups",
    multiple=True,
    required=True,
    help="Comma-separated sink tables of one sub-pipeline; repeat for each.",
)
@_fmt
@project_option
@known_table
def split(sink_groups: tuple[str, ...], fmt: str, project: Path) -> None:
    """Split into non-overlapping sub-pipelines; shared upstream goes to the first that needs it."""
    catalog = load(project)
    groups = [[s.strip() for s in group.split(",") if s.strip()] for group in sink_groups]
    for group in groups:
        for sink in group:
            if sink not in catalog.datasets:
                fail(f"unknown sink table {sink!r}")
    parts = catalog.lineage.split(groups)
    if fmt == "json":
        click.echo(
            json.dumps(
                [{"sinks": list(p.sinks), "tables": list(p.tables)} for p in parts], indent=2
            )
        )
        return
    for i, part in enumerate(parts, 1):
        click.echo(
            f"sub-pipeline {i} (sinks: {', '.join(part.sinks)}): {len(part.tables)} table(s)"
        )
        for table in part.tables:
            click.echo(f"  {table}")


@click.command("trace-pii")
@_fmt
@project_option
def trace_pii(fmt: str, project: Path) -> None:
    """Every table and column that PII reaches, and whether it arrives masked."""
    reach = load(project).lineage.pii_trace()
    if fmt == "json":
        click.echo(
            json.dumps(
                [
                    {
                        "column": r.column,
                        "from": list(r.origins),
                        "exposed": r.exposed,
                        "depth": r.depth,
                    }
                    for r in reach
                ],
                indent=2,
            )
        )
        return
    tables: dict[str, list[str]] = {}
    for r in reach:
        table, column = r.column.rsplit(".", 1)
        state = "EXPOSED" if r.exposed else "masked"
        tables.setdefault(table, []).append(f"{column} ({state}, from {', '.join(r.origins)})")
    for table, columns in tables.items():
        click.echo(table)
        for column in columns:
            click.echo(f"  {column}")
    exposed = sorted({r.column.rsplit(".", 1)[0] for r in reach if r.exposed})
    click.echo(
        f"PII reaches {len(reach)} column(s) in {len(tables)} table(s); "
        f"unmasked in {len(exposed)} table(s)"
    )
