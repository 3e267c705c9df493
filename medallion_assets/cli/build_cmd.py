"""``medallion build TABLE [--partition DAY]``: one table, headless, for other orchestrators."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from medallion_assets.catalog import CatalogError
from medallion_assets.cli.common import does_not_load, fail, project_option, settings_for


@click.command("build")
@click.argument("table")
@click.option("--partition", default=None, help="The day of a daily table (YYYY-MM-DD).")
@project_option
def build(table: str, partition: str | None, project: Path) -> None:
    """Materialize TABLE alone: the step `medallion run` runs for it (kill switch, build lock,
    checks, publish, warehouse load, audit, OpenLineage), as one run on the project's Dagster
    instance. Exits 1 when the table failed or a blocking check kept it from publishing, so an
    orchestrator's task for it fails and its downstream tasks do not start.

    \b
    medallion build silver.orders_usd
    medallion build bronze.user_events --partition 2026-01-02
    """
    from medallion_assets.adapters.headless import build_table
    from medallion_assets.cli.run_cmd import blocked, failed, warnings
    from medallion_assets.cli.run_cmd import table as summary_table

    settings = settings_for(project)
    if settings.spark_log is None:  # Spark's own lines go to a log file, as for `run`
        spark_log = settings.state_home / "logs/spark.log"
        os.environ["MEDALLION_SPARK_LOG"] = str(spark_log)
        settings = settings.model_copy(update={"spark_log": spark_log})
    try:
        summary = build_table(project, table, partition, log=click.echo, settings=settings)
    except CatalogError as error:
        does_not_load(project, error)
    except (KeyError, ValueError) as error:
        fail(str(error).strip("'\""))
    click.echo(summary_table(summary))
    for section in (blocked(project, summary), warnings(summary), failed(summary)):
        if section:
            click.echo("\n" + section)
    for name, message in sorted(summary.disabled.items()):
        click.echo(f"\nDISABLED: {name}: {message.removeprefix('skipped: ')}")
    if summary.having("failed") or summary.having("blocked"):
        sys.exit(1)
