"""``medallion jars``: fetch Spark's JVM packages once per machine, or check they are there."""

from __future__ import annotations

import click

from medallion_assets.jvm.jars import ensure, jar_folder
from medallion_assets.settings import MedallionSettings


@click.command("jars")
@click.option(
    "--check", is_flag=True, help="Only check the folder is complete (exit 2 and say so if not)."
)
@click.pass_obj
def jars(settings: MedallionSettings, check: bool) -> None:
    """Fetch Spark's JVM packages (Iceberg, s3a, JDBC drivers) from Maven Central into
    MEDALLION_SPARK_JARS, once per machine; a complete folder is left as it is."""
    folder = settings.jars_folder
    if check:
        found, seconds = jar_folder(folder), None
    else:
        found, seconds = ensure(folder)
    size = found.size_bytes / 1e6
    how = f"fetched in {seconds:.0f} s" if seconds is not None else "already fetched"
    click.echo(f"{len(found.jars)} jars ({size:.0f} MB) in {found.path}: {how}")
