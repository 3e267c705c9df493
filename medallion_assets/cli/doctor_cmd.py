"""``medallion doctor``: the preflight a run does before Spark starts, every line of it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from medallion_assets.cli.common import load, project_option, settings_for

MARKS = {"ok": "ok", "warning": "WARN", "failed": "FAIL", "skipped": "skip"}


@click.command("doctor")
@click.option(
    "--deep",
    is_flag=True,
    help="Also read back every table's version in force: its schema against the one medallion "
    "wrote, and every data file it lists (one request per file; no Spark).",
)
@project_option
def doctor(deep: bool, project: Path) -> None:
    """Check, without starting Spark, what a run needs: Spark's jars, the AWS credentials
    (where they come from, never their value), the lake's bucket or folder (there and
    writable), the lake's catalog, the raw sources' buckets and the warehouse. One line per
    part; exits 2 when a run would stop at preflight, 0 otherwise.

    \b
    medallion doctor
    MEDALLION_LAKE=s3://my-lake/prod MEDALLION_LAKE_CATALOG=postgresql://u@h/db medallion doctor
    medallion doctor --deep   # and every table's files, as another engine may have left them
    """
    # boto3, pyiceberg and the warehouse drivers: loaded only by the commands that use them
    from medallion_assets.lake import Lake
    from medallion_assets.preflight import preflight
    from medallion_assets.preflight.tables import table_findings

    settings = settings_for(project)
    catalog = load(project)
    findings = preflight(settings, catalog)
    if deep and not any(f.failed and f.part in ("lake", "catalog") for f in findings):
        findings += table_findings(Lake.of(settings), catalog)
    for found in findings:
        click.echo(f"{MARKS[found.status]:<5} {found.part:<12} {found.line}")
    failed = [f for f in findings if f.failed]
    if failed:
        click.echo(f"error: {len(failed)} problem(s): a run would stop before Spark", err=True)
        sys.exit(2)
