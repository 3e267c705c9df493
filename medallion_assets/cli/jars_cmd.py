"""``medallion jars``: fetch Spark's JVM packages once per machine (and record the driver's
class-data archive), or check they are there; and compile the package's own modules."""

from __future__ import annotations

import compileall
import io
from contextlib import redirect_stdout
from pathlib import Path

import click

from medallion_assets.jvm import class_archive
from medallion_assets.jvm.jars import ensure, jar_folder
from medallion_assets.settings import MedallionSettings


@click.command("jars")
@click.option(
    "--check", is_flag=True, help="Only check the folder is complete (exit 2 and say so if not)."
)
@click.pass_obj
def jars(settings: MedallionSettings, check: bool) -> None:
    """Fetch Spark's JVM packages (Iceberg, s3a, JDBC drivers) from Maven Central into
    MEDALLION_SPARK_JARS, once per machine; a complete folder is left as it is. With `javac`
    on the machine, medallion's own small jar is compiled beside them: a local driver then
    writes a local lake's files without starting a `chmod` process for each.

    Then, once, a run of the starter project records the class-data archive of the Spark
    driver beside the jars (MEDALLION_SPARK_CLASS_ARCHIVE=auto): every later run's driver
    starts from it, seconds sooner. Runs work without it.

    And the package's own Python modules are compiled to bytecode beside them: an editable
    install (`uv sync`) leaves them as source, and with PYTHONDONTWRITEBYTECODE set every
    process would compile them again (seconds per command, per Dagster process)."""
    if not check:
        compile_package()
    folder = settings.jars_folder
    if check:
        found, seconds = jar_folder(folder), None
    else:
        found, seconds = ensure(folder)
    size = found.size_bytes / 1e6
    how = f"fetched in {seconds:.0f} s" if seconds is not None else "already fetched"
    click.echo(f"{len(found.jars)} jars ({size:.0f} MB) in {found.path}: {how}")
    if check or settings.spark_class_archive != "auto":
        return
    archive = class_archive.archive_file(found.path)
    if archive.is_file():
        class_archive.name_owner(archive)  # one recorded before its owner was written
        click.echo(f"class-data archive of the Spark driver in {archive}: already recorded")
        return
    click.echo("recording the Spark driver's class-data archive (a run of the starter project) ...")
    try:
        seconds = class_archive.record(found.path)
    except (class_archive.ArchiveNotRecorded, OSError) as error:
        click.echo(
            f"class-data archive not recorded ({error}): runs work without it, their "
            "Spark driver starts a few seconds slower"
        )
        return
    click.echo(f"class-data archive of the Spark driver in {archive}: recorded in {seconds:.0f} s")


def compile_package() -> bool:
    """Compile the package's modules into their ``__pycache__`` (those already compiled from
    their current source are left as they are); False when the folder cannot be written (an
    install the user may not change: its installer compiled it, or the modules compile in
    memory as before)."""
    package = Path(__file__).parents[1]  # medallion_assets/
    with redirect_stdout(io.StringIO()):  # compileall names each file it cannot write
        try:
            return bool(compileall.compile_dir(package, quiet=2, workers=1))
        except OSError:
            return False
