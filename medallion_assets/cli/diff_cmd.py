"""``medallion diff --env NAME [TABLE]``: how an environment's tables differ from main's."""

from __future__ import annotations

import json
from pathlib import Path

import click

from medallion_assets.cli.common import fail, load, project_option, settings_for
from medallion_assets.cli.env_cmd import env_lake
from medallion_assets.environments.diff import TableDiff
from medallion_assets.environments.published import built_in


@click.command("diff")
@click.option("--env", "env", required=True, metavar="NAME", help="The environment to compare.")
@click.argument("table", required=False)
@click.option("--sample", default=5, show_default=True, help="Changed rows to show per table.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@project_option
def diff(env: str, table: str | None, sample: int, fmt: str, project: Path) -> None:
    """For each table environment NAME built (or TABLE): rows added, removed and changed
    against main (by the table's keys, else a digest of each row), each column's nulls,
    distinct values, min, max and sum on both sides where they differ, and a sample of changed
    rows (personal data masked)."""
    # Spark and the lake: loaded only by the commands that use them
    from medallion_assets.cli.run_cmd import with_spark_log
    from medallion_assets.environments.diff import diff_table
    from medallion_assets.jvm.driver import spark_jars
    from medallion_assets.runtime.spark_session import spark_session

    catalog = load(project)
    lake = env_lake(project, env)
    if table is not None and table not in catalog.datasets:
        fail(f"{table} is not a table of the project (`medallion catalog show`)")
    names = [table] if table else list(catalog.datasets)
    built = [n for n in names if built_in(lake, env, n)]
    if not built:
        fail(f"environment {env} has built {table or 'no table'} (`medallion env list`)")
    settings = settings_for(project)
    spark_jars(settings)
    spark = spark_session(with_spark_log(settings))
    found = [diff_table(spark, lake, catalog, env, name, sample) for name in built]
    if fmt == "json":
        click.echo(json.dumps([d.as_dict() for d in found], indent=2, default=str))
        return
    for one in found:
        click.echo(diff_text(one))


def diff_text(found: TableDiff) -> str:
    lines = [
        f"{found.table} (matched by {found.matched_by}): main {found.main_rows:,} rows, "
        f"env {found.env_rows:,}: {found.added:,} added, {found.removed:,} removed, "
        f"{found.changed:,} changed"
    ]
    if found.columns_added:
        lines.append(f"  columns added: {', '.join(found.columns_added)}")
    if found.columns_removed:
        lines.append(f"  columns removed: {', '.join(found.columns_removed)}")
    for column in found.columns:
        if column.differs:
            parts = [
                f"{k} {column.main.get(k)!r} -> {column.env.get(k)!r}"
                for k in ("nulls", "distinct", "min", "max", "sum")
                if column.main.get(k) != column.env.get(k)
            ]
            lines.append(f"  {column.column}: {'; '.join(parts)}")
    for row in found.sample:
        lines.append("  changed: " + ", ".join(f"{k}={v}" for k, v in row.items()))
    return "\n".join(lines)
