"""``medallion build TABLE [--partition DAY]``: one table, headless, for other orchestrators."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from medallion_assets.catalog import CatalogError
from medallion_assets.cli.common import (
    checked_before_spark,
    does_not_load,
    fail,
    project_option,
    settings_for,
)

EXIT_RETRYABLE = 1  # failed; another attempt may succeed
EXIT_PERMANENT = 3  # blocked by a check, a permanent error, no route left: do not retry


@click.command("build")
@click.argument("table")
@click.option("--partition", default=None, help="The day of a daily table (YYYY-MM-DD).")
@click.option(
    "--no-retry",
    is_flag=True,
    help="One attempt: heal, then fail rather than retry (for an orchestrator that retries "
    "the task with policies.yaml's retries, as `medallion export` sets them).",
)
@click.option(
    "--rebuild",
    "--full-refresh",
    "rebuild",
    is_flag=True,
    help="Build even when its code and inputs are unchanged: a version `medallion doctor "
    "--deep` found damaged (a data file gone) is replaced; bronze reads every object again; "
    "an append or merge table is built from its whole input.",
)
@project_option
def build(table: str, partition: str | None, no_retry: bool, rebuild: bool, project: Path) -> None:
    """Materialize TABLE alone: the step `medallion run` runs for it (kill switch, build lock,
    checks, publish, warehouse load, audit, OpenLineage), as one run on the project's Dagster
    instance. Exits 0 when it was built or unchanged; 1 when it failed and another attempt may
    succeed; 3 when another attempt would not (a blocking check kept it from publishing, a
    permanent error, no route left), so an orchestrator's task for it fails, its downstream
    tasks do not start, and a retry condition can tell the two apart.

    \b
    medallion build silver.orders_usd
    medallion build bronze.user_events --partition 2026-01-02
    medallion build silver.orders_usd --no-retry   # as an exported task runs it
    medallion build silver.orders_usd --rebuild    # its version in force is damaged
    """
    # Dagster: loaded only by the commands that run it (`medallion --help` stays quick)
    from medallion_assets.adapters.headless import build_table
    from medallion_assets.cli.run_cmd import with_spark_log
    from medallion_assets.cli.run_report import sections
    from medallion_assets.cli.run_report import table as summary_table
    from medallion_assets.lake import Lake

    settings = with_spark_log(settings_for(project))  # Spark's own lines to a file, as for run
    Lake.of(settings).check_layout()  # a lake folder of the old layout: one line
    catalog = checked_before_spark(project, settings)  # jars, credentials, lake, warehouse
    try:
        summary = build_table(
            project,
            table,
            partition,
            log=click.echo,
            settings=settings,
            retry=not no_retry,
            rebuild=rebuild,
            catalog=catalog,
        )
    except CatalogError as error:
        does_not_load(project, error)
    except (KeyError, ValueError) as error:
        fail(str(error).strip("'\""))
    click.echo(summary_table(summary))
    for section in sections(project, summary):
        click.echo("\n" + section)
    for name, message in sorted(summary.disabled.items()):
        click.echo(f"\nDISABLED: {name}: {message.removeprefix('skipped: ')}")
    ended = summary.having("failed", "blocked")
    if summary.missing and not ended:  # not built, no version: its source may come back
        sys.exit(EXIT_RETRYABLE)
    if ended:
        sys.exit(EXIT_RETRYABLE if any(r.retryable for r in ended) else EXIT_PERMANENT)
