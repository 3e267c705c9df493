"""``medallion run``: materialize every table headless, then print a summary."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from medallion_assets.cli.common import project_option


@click.command("run")
@project_option
@click.option(
    "--fail-on-blocked",
    is_flag=True,
    help="Exit 1 also when the only failures are blocking checks that kept bad data from "
    "publishing (by default those exit 0 and are listed).",
)
def run(project: Path, fail_on_blocked: bool) -> None:
    """Materialize every asset of the project on the configured components, headless.

    Daily-partitioned tables run for each day found in their raw data, then the rest. Runs
    go to the Dagster instance of $DAGSTER_HOME, else to <project>/.medallion/dagster, so
    `dagster dev` with that DAGSTER_HOME shows them.
    """
    from medallion_assets.adapters.headless import dagster_home, run_project

    summary = run_project(project, log=lambda m: click.echo(m))
    click.echo(_table(summary))
    if summary.blocked:
        click.echo(_blocked(project, summary.blocked))
    if summary.disabled:
        click.echo("\nDISABLED: the kill switch skipped these tables (`medallion control status`)")
        for table, message in sorted(summary.disabled.items()):
            click.echo(f"  {table}: {message.removeprefix('skipped: ')}")
        if summary.not_run:
            tables = sorted(set(summary.not_run))
            click.echo(f"  not run, upstream switched off: {', '.join(tables)}")
    if summary.failed:
        click.echo("\nFAILED: these tables did not build (full errors in Dagster's event log)")
        for table, reason in sorted(summary.failed.items()):
            click.echo(f"  {table}: {reason}")
    if not summary.success and (fail_on_blocked or not summary.only_blocked):
        click.echo("error: the run failed; see the messages above", err=True)
        sys.exit(1)
    home = os.environ.get("DAGSTER_HOME") or dagster_home(project)
    click.echo(
        "\nOpen the asset graph, runs and checks in the Dagster UI:\n"
        f"  DAGSTER_HOME={home} {Path(sys.executable).parent / 'dagster'} dev "
        f"-w {Path(project).resolve() / 'workspace.yaml'}\n"
        "  then browse http://127.0.0.1:3000"
    )


def _table(summary) -> str:  # type: ignore[no-untyped-def]
    rows = sorted(summary.results, key=lambda r: (r.table, r.partition or ""))
    lines = [
        f"{'table':<42} {'partition':<11} {'rows':>9} {'status':<8} "
        f"{'quarantined':>11} {'warehouse':>9} {'checks':>7}"
    ]
    for r in rows:
        checks = f"{r.checks_passed}/{r.checks_passed + r.checks_failed}"
        lines.append(
            f"{r.table:<42} {r.partition or '-':<11} {r.rows:>9,} "
            f"{'skipped' if r.skipped else 'built':<8} "
            f"{'' if r.quarantined is None else r.quarantined:>11} "
            f"{'' if r.warehouse_rows is None else r.warehouse_rows:>9} {checks:>7}"
        )
    tables = len({r.table for r in rows})
    total = sum(r.rows for r in rows)
    passed = sum(r.checks_passed for r in rows)
    failed = sum(r.checks_failed for r in rows)
    lines.append(
        f"{tables} tables, {len(rows)} materializations, {total:,} rows, "
        f"checks {passed} passed / {failed} failed, {summary.seconds:.1f} s, "
        f"{len(summary.run_ids)} run(s)"
    )
    return "\n".join(lines)


def _blocked(project: Path, blocked: dict[str, list[str]]) -> str:
    """Which tables checks held back, why, and what downstream kept its previous version."""
    from medallion_assets.catalog import load_catalog

    catalog = load_catalog(project)
    lines = ["", "BLOCKED: failing blocking checks kept these tables from publishing"]
    for table, reasons in sorted(blocked.items()):
        lines.append(f"  {table}")
        lines += [f"    - {reason}" for reason in reasons]
        protected = sorted(catalog.lineage.dag.downstream(table))
        if protected:
            lines.append(f"    protected downstream (not built on it): {', '.join(protected)}")
    lines.append(
        "  Previous versions stay current; `medallion impact TABLE` shows what depends on them."
    )
    return "\n".join(lines)
