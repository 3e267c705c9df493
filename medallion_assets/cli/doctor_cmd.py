"""``medallion doctor``: the preflight a run does before Spark starts, every line of it."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from medallion_assets.cli.common import load, project_option, settings_for

MARKS = {"ok": "ok", "warning": "WARN", "failed": "FAIL", "skipped": "skip"}


@click.command("doctor")
@project_option
def doctor(project: Path) -> None:
    """Check, without starting Spark, what a run needs: Spark's jars, the AWS credentials
    (where they come from, never their value), the lake's bucket or folder (there and
    writable), the lake's catalog, the raw sources' buckets and the warehouse. One line per
    part; exits 2 when a run would stop at preflight, 0 otherwise.

    \b
    medallion doctor
    MEDALLION_LAKE=s3://my-lake/prod MEDALLION_LAKE_CATALOG=postgresql://u@h/db medallion doctor
    """
    # boto3, pyiceberg and the warehouse drivers: loaded only by the commands that use them
    from medallion_assets.preflight import preflight

    settings = settings_for(project)
    findings = preflight(settings, load(project))
    for found in findings:
        click.echo(f"{MARKS[found.status]:<5} {found.part:<12} {found.line}")
    failed = [f for f in findings if f.failed]
    if failed:
        click.echo(f"error: {len(failed)} problem(s): a run would stop before Spark", err=True)
        sys.exit(2)
