"""``medallion run``: materialize every table headless, then say what happened."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medallion_assets.catalog import CatalogError, load_catalog
from medallion_assets.cli.common import (
    checked_before_spark,
    does_not_load,
    log_python_to,
    max_workers_option,
    native_stderr_to,
    project_option,
    settings_for,
    spark_log_of,
)
from medallion_assets.cli.run_report import in_force, sections, table
from medallion_assets.runtime.stop import RunStopped, stop_on_signals

EXIT_BLOCKED = 3  # as `medallion build`: blocking checks kept a table from publishing

if TYPE_CHECKING:
    from medallion_assets.adapters.run_summary import RunSummary
    from medallion_assets.catalog import Catalog
    from medallion_assets.settings import MedallionSettings


@click.command("run")
@project_option
@click.option(
    "--allow-blocked",
    is_flag=True,
    help="Exit 0 when the only failures are blocking checks that kept bad data from publishing "
    "(by default those exit 3, as `medallion build` does, and the run is a failure in Dagster).",
)
@click.option(
    "--wait",
    "wait_seconds",
    type=float,
    default=3600.0,
    show_default=True,
    help="Seconds to wait for another `medallion run` on this project before giving up.",
)
@click.option(
    "--full-refresh",
    "full_refresh",
    is_flag=False,
    flag_value="*",
    default="",
    metavar="[SELECTION]",
    help="Build these tables in full even when their code and inputs are unchanged, and an "
    "append or merge table from its whole input: alone, every table; with a selection, its "
    "tables (silver.orders_usd,gold.*,layer:silver,tag:NAME,pipeline:NAME).",
)
@click.option(
    "--env",
    "env",
    default=None,
    metavar="NAME",
    help="Build only what the project folder changes against main (`medallion plan --env "
    "NAME`) onto the tables' branches env_NAME, reading the rest from main; main is untouched "
    "(`medallion promote NAME` makes it main's).",
)
@max_workers_option
def run(
    project: Path,
    allow_blocked: bool,
    wait_seconds: float,
    full_refresh: str,
    env: str | None,
    max_workers: int | None,
) -> None:
    """Materialize every asset of the project on the configured components, headless.

    Daily-partitioned tables run for each day found in their raw data, then the rest. Runs
    go to the Dagster instance of $DAGSTER_HOME, else to $MEDALLION_HOME/dagster (by default
    <project>/.medallion/dagster), so `dagster dev` with that DAGSTER_HOME shows them.

    \b
    medallion run                                   # what changed since the last run
    medallion run --full-refresh                    # every table from its whole input
    medallion run --full-refresh silver.orders_usd  # that table (and what reads it, as usual)
    medallion run --env dev_anna                    # what the folder changes, on env_dev_anna
    """
    # Spark and the lake: loaded only by the commands that use them
    from medallion_assets.lake import Lake

    settings = settings_for(project)
    if max_workers is not None:  # through the environment too, like the Spark log below
        os.environ["MEDALLION_MAX_WORKERS"] = str(max_workers)
        settings = settings.model_copy(update={"max_workers": max_workers})
    settings = with_spark_log(settings)
    if full_refresh:
        full_refresh = _refreshed(project, full_refresh)
    lake = Lake.of(settings)
    lake.check_layout()  # a lake folder of the old layout: one line
    # jars, credentials, lake, catalog, warehouse; the project as the run uses it
    catalog = checked_before_spark(project, settings)
    if lake.exists():  # a promotion a stop left half-way: finished or rolled back first
        lake.environments().recover(lambda m: click.echo(f"warning: {m}", err=True))
    tables = None
    if env is not None:
        # dev environments: loaded only by a run in one
        from medallion_assets.cli.env_cmd import say_plan

        tables = say_plan(project, catalog, env, click.echo)
        if not tables:
            return
    try:
        with stop_on_signals():
            summary = _run(project, catalog, settings, wait_seconds, full_refresh, env, tables)
    except RunStopped as stopped:
        click.echo(
            f"error: {stopped}: no table was published half-way (a table being built when it "
            "came stays as it was); run `medallion run` again to finish",
            err=True,
        )
        sys.exit(stopped.exit_code)
    _report(project, summary, allow_blocked)


def _refreshed(project: Path, selection: str) -> str:
    """The tables ``--full-refresh`` names (``*``: every table), said; a selection that names
    nothing is one line, exit 2."""
    # the selection's grammar: loaded only by the commands that take one
    from medallion_assets.catalog.selection import select_tables

    try:
        catalog = load_catalog(project)
    except CatalogError as error:
        does_not_load(project, error)
    if selection == "*":
        click.echo(f"full refresh: every table ({len(catalog.datasets)})")
        return selection
    try:
        tables = select_tables(catalog, selection)
    except ValueError as error:
        click.echo(f"error: {str(error).replace('--select', '--full-refresh', 1)}", err=True)
        sys.exit(2)
    click.echo(f"full refresh: {', '.join(tables)}")
    return ",".join(tables)


def _run(
    project: Path,
    catalog: Catalog,
    settings: MedallionSettings,
    wait_seconds: float,
    full_refresh: str,
    env: str | None = None,
    tables: list[str] | None = None,
) -> RunSummary:
    """Run the project (``tables`` of it; in dev environment ``env``) under its run lock, the
    Spark driver starting meanwhile."""
    # Spark and the lake: loaded only by the commands that use them
    from medallion_assets.runtime.run_lock import RunInProgress, one_run_at_a_time
    from medallion_assets.runtime.spark_session import SparkWarmUp, pool_weights, reports_lineage

    try:
        with one_run_at_a_time(settings, catalog.project.name, click.echo, wait_seconds):
            # When the run certainly builds, the Spark driver starts behind the run lock,
            # while Dagster is imported and the instance loaded: its start-up is off the run's
            # critical path. Otherwise the first step that needs Spark starts it, and a run
            # with nothing new starts none. Not when Spark reports lineage: its driver names
            # the Dagster run that starts it as parent (io/spark_lineage.py).
            warm_up = (
                SparkWarmUp(settings, pool_weights(catalog.profiles), say=click.echo)
                if (env is not None or _certainly_builds(settings, catalog, full_refresh))
                and not reports_lineage(settings)
                else None
            )
            try:
                # Dagster: loaded only by the commands that run it (`medallion --help` stays quick)
                from medallion_assets.adapters.headless import run_project

                summary = run_project(
                    project,
                    log=lambda m: click.echo(m),
                    progress=True,
                    settings=settings,
                    warm_up=warm_up,
                    run_lock_held=True,
                    full_refresh=full_refresh,
                    catalog=catalog,
                    env=env,
                    tables=tables,
                )
            finally:
                # An error before the first step is said on stderr, which the JVM's launch
                # may hold until the warm-up is done.
                if warm_up is not None:
                    warm_up.wait()
    except CatalogError as error:
        does_not_load(project, error)
    except RunInProgress as busy:
        click.echo(f"error: {busy}", err=True)
        sys.exit(1)
    return summary


def _certainly_builds(settings: MedallionSettings, catalog: Catalog, full_refresh: str) -> bool:
    """Whether the run builds for certain: a full refresh, a first run (the lake lacks the
    project's first table), or a raw object landed (``runtime.ingest.landed``). Else each step
    decides without Spark whether it builds."""
    # The lake, the control store and the raw store: loaded only by the commands that use them
    from medallion_assets.control_plane import ControlPlane
    from medallion_assets.io.s3_store import object_store_of
    from medallion_assets.lake import Lake
    from medallion_assets.runtime.ingest.landed import landed

    first = min(catalog.datasets, default=None)
    if full_refresh or (first is not None and not Lake.of(settings).current_versions(first)):
        return True
    try:
        state = ControlPlane.of(settings).store().state
        return landed(catalog, object_store_of(settings), state) is not None
    except Exception:  # a source or store that fails here fails its step, which says why
        return True


def _report(project: Path, summary: RunSummary, allow_blocked: bool) -> None:
    """The run's summary table, its sections and how to open the UI; exit 1 when a table
    failed, 3 when blocking checks were the only failures (unless ``allow_blocked``)."""
    click.echo("\n" + table(summary))
    for section in sections(project, summary):
        click.echo("\n" + section)
    if summary.disabled:
        click.echo(
            "\nDISABLED: the kill switch or the profile's skip_below skipped these tables "
            "(`medallion control status`)"
        )
        for name, message in sorted(summary.disabled.items()):
            click.echo(f"  {name}: {message.removeprefix('skipped: ')}")
    held = in_force(project)
    if held:
        click.echo("\n" + held)
    waited = [*summary.waited, *(f"{r.label}: {r.message}" for r in summary.having("busy"))]
    if waited:
        click.echo("\nWAITED: another run was building these tables")
        click.echo("\n".join(f"  {line}" for line in waited))
    _open_the_ui(project)
    if summary.having("failed"):
        click.echo("error: the run failed; see the messages above", err=True)
        sys.exit(1)

    if summary.missing:
        click.echo(
            f"error: {len(summary.missing)} table(s) were not built and have no version (NOT "
            "BUILT above): bring what is down back up (`medallion control status`, `medallion "
            "control up NODE`) and run again",
            err=True,
        )
        sys.exit(1)
    blocked_tables = {r.table for r in summary.having("blocked")}
    if blocked_tables and not allow_blocked:
        # One meaning in both places: Dagster fails a step whose blocking check fails, so a
        # blocked table is a failed run there and here (the data did not move forward).
        click.echo(
            f"error: blocking checks kept {len(blocked_tables)} table(s) from publishing (see "
            "BLOCKED above; the versions before stay current)",
            err=True,
        )
        sys.exit(EXIT_BLOCKED)


def _open_the_ui(project: Path) -> None:

    root = Path(project).resolve()
    # `medallion dev` opens the same Dagster instance this run was recorded in, on any project.
    here = root == Path.cwd().resolve()
    click.echo(
        "\nOpen the asset graph, runs and checks in the Dagster UI:\n"
        f"  medallion dev{'' if here else ' --project ' + shlex.quote(str(root))}\n"
        "  then browse http://127.0.0.1:3000"
    )


def with_spark_log(settings: MedallionSettings) -> MedallionSettings:
    """``settings`` with Spark's banners, warnings and Java traces going to a log file (unless
    one is set), not between the run's lines, and native libraries' stderr with them; Python's
    root log (py4j logs a traceback there when the JVM goes away) goes to ``logs/python.log``
    beside it. Through the environment too, because the run's resources read their settings
    from it when the run sets them up."""
    log_python_to(settings.state_home / "logs/python.log", settings.secrets)
    if settings.spark_log is not None:
        native_stderr_to(settings.spark_log)
        return settings
    spark_log = spark_log_of(settings)
    native_stderr_to(spark_log)  # Arrow's C++ lines too, beside the JVM's
    os.environ["MEDALLION_SPARK_LOG"] = str(spark_log)
    return settings.model_copy(update={"spark_log": spark_log})
