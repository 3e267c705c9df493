"""``medallion run``: materialize every table headless, then say what happened."""

from __future__ import annotations

import json
import os
import shlex
import sys
import textwrap
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
from medallion_assets.runtime.stop import RunStopped, stop_on_signals

EXIT_BLOCKED = 3  # as `medallion build`: blocking checks kept a table from publishing

if TYPE_CHECKING:
    from medallion_assets.adapters.run_summary import RunSummary
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
@max_workers_option
def run(project: Path, allow_blocked: bool, wait_seconds: float, max_workers: int | None) -> None:
    """Materialize every asset of the project on the configured components, headless.

    Daily-partitioned tables run for each day found in their raw data, then the rest. Runs
    go to the Dagster instance of $DAGSTER_HOME, else to $MEDALLION_HOME/dagster (by default
    <project>/.medallion/dagster), so `dagster dev` with that DAGSTER_HOME shows them.
    """
    # Spark and the lake: loaded only by the commands that use them
    from medallion_assets.lake import Lake

    settings = settings_for(project)
    if max_workers is not None:  # through the environment too, like the Spark log below
        os.environ["MEDALLION_MAX_WORKERS"] = str(max_workers)
        settings = settings.model_copy(update={"max_workers": max_workers})
    settings = with_spark_log(settings)
    Lake.of(settings).check_layout()  # a lake folder of the old layout: one line
    checked_before_spark(project, settings)  # jars, credentials, lake, catalog, warehouse
    try:
        with stop_on_signals():
            summary = _run(project, settings, wait_seconds)
    except RunStopped as stopped:
        click.echo(
            f"error: {stopped}: no table was published half-way (a table being built when it "
            "came stays as it was); run `medallion run` again to finish",
            err=True,
        )
        sys.exit(stopped.exit_code)
    _report(project, summary, allow_blocked)


def _run(project: Path, settings: MedallionSettings, wait_seconds: float) -> RunSummary:
    """Run the project under its run lock, the Spark driver starting meanwhile."""
    # Spark and the lake: loaded only by the commands that use them
    from medallion_assets.catalog import load_catalog
    from medallion_assets.runtime.run_lock import RunInProgress, one_run_at_a_time
    from medallion_assets.runtime.spark_session import SparkWarmUp, pool_weights, reports_lineage

    try:
        catalog = load_catalog(project)
        with one_run_at_a_time(settings, catalog.project.name, click.echo, wait_seconds):
            # The Spark driver starts behind the run lock, while the lake and the warehouse
            # are checked, Dagster imported and the instance loaded: its start-up is off the
            # run's critical path. Not when Spark reports lineage: its driver names the
            # Dagster run that starts it as parent (io/spark_lineage.py), so the first step
            # starts it.
            warm_up = (
                None
                if reports_lineage(settings)
                else SparkWarmUp(settings, pool_weights(catalog.profiles), say=click.echo)
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


def _report(project: Path, summary: RunSummary, allow_blocked: bool) -> None:
    """The run's summary table, its sections and how to open the UI; exit 1 when a table
    failed, 3 when blocking checks were the only failures (unless ``allow_blocked``)."""
    click.echo("\n" + table(summary))
    for section in (
        blocked(project, summary),
        not_built(summary),
        set_aside(summary),
        copies(summary),
        warnings(summary),
        failed(summary),
    ):
        if section:
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


def in_force(project: Path) -> str:
    """The down nodes and reroutes the control store holds after the run (healing's or an
    operator's): a run that read around a source says so, whatever it built."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.cli.control_cmd import open_plane
    from medallion_assets.recovery.recover import DownNodes

    store = open_plane(project).store()
    lines = [
        f"  {n.node} is down (by {n.changed_by} since {n.changed_at}): {n.reason}; "
        f"`medallion control up {n.node}` when it is back"
        for n in DownNodes(store).all().values()
    ]
    lines += [
        f"  {table} reads along route {r.route} (by {r.changed_by}): {r.reason}"
        for table, r in sorted(store.routes().items())
    ]
    if not lines:
        return ""
    return "DOWN AND REROUTED: in force in the control store (`medallion control status`)\n" + (
        "\n".join(lines)
    )


def _open_the_ui(project: Path) -> None:

    root = Path(project).resolve()
    # `medallion dev` opens the same Dagster instance this run was recorded in, on any project.
    here = root == Path.cwd().resolve()
    click.echo(
        "\nOpen the asset graph, runs and checks in the Dagster UI:\n"
        f"  medallion dev{'' if here else ' --project ' + shlex.quote(str(root))}\n"
        "  then browse http://127.0.0.1:3000"
    )


def table(summary: RunSummary) -> str:
    """One row per table and partition, then the totals."""
    # Dagster: loaded only by the commands that run it (`medallion --help` stays quick)
    from medallion_assets.adapters.run_summary import counts

    rows = sorted(summary.results, key=lambda r: (r.table, r.partition or ""))
    lines = [
        f"{'table':<40} {'partition':<10} {'status':<9} {'written':>9} {'current':>9} "
        f"{'quarantined':>11} {'warehouse':>9} {'checks':>7}"
    ]
    for r in rows:
        checks = f"{r.checks_passed}/{len(r.checks)}" if r.checks else ""
        written = r.rows if r.status == "built" else None
        lines.append(
            f"{r.table:<40} {r.partition or '-':<10} {r.status:<9} {_number(written):>9} "
            f"{_number(r.current_rows):>9} {_number(r.quarantined):>11} "
            f"{_number(r.warehouse_rows):>9} {checks:>7}"
        )
    found = counts(summary.results)
    tally = ", ".join(f"{n} {status}" for status, n in found.items() if n)
    passed = sum(r.checks_passed for r in rows)
    failed_checks = sum(r.checks_failed for r in rows)
    head = ""
    if summary.nothing_changed:  # with a table blocked, its rejected output is a change refused
        head = "nothing published: " if summary.having("blocked") else "nothing changed: "
    lines.append(
        f"{head}{tally}; {summary.rows_written:,} row{'' if summary.rows_written == 1 else 's'} "
        f"written by this run; checks {passed} "
        f"passed / {failed_checks} failed; {summary.seconds:.1f} s, {len(summary.run_ids)} run(s)"
    )
    return "\n".join(lines)


def blocked(project: Path, summary: RunSummary) -> str:
    """Which tables checks held back, why, and what downstream kept its previous version."""
    held = summary.having("blocked")
    if not held:
        return ""

    catalog = load_catalog(project)
    lines = ["BLOCKED: failing blocking checks kept these tables from publishing"]
    for result in sorted(held, key=lambda r: r.label):
        head, *checks = result.message.splitlines()
        lines.append(f"  {head}")
        lines += [f"  {line}" for line in checks]
        for check in result.checks:
            if check.sample is not None and not check.passed:
                lines.append(f"      sample failing row: {json.dumps(check.sample, default=str)}")
        protected = sorted(catalog.lineage.dag.downstream(result.table))
        if protected:
            lines.append(f"    protected downstream (not built on it): {', '.join(protected)}")
    lines.append("  `medallion impact TABLE` shows what depends on them.")
    return "\n".join(lines)


def not_built(summary: RunSummary) -> str:
    """Tables no available path produced (a source down, no replica or alternate left)."""
    held = summary.having("not built")
    if not held:
        return ""
    lines = ["NOT BUILT: no available path produces these tables (a source they need is down)"]
    for r in sorted(held, key=lambda r: r.label):
        kept = "the version before stays current" if r.published else "it has NO version yet"
        lines.append(f"  {r.label}: {r.message}; {kept}")
    return "\n".join(lines)


def set_aside(summary: RunSummary) -> str:
    """Raw objects this run did not ingest (corrupt, empty, of another format or encoding), each
    with why: their producer has something to fix; their table was built without them."""
    lines = [f"  {r.label}: {key}: {why}" for r in summary.results for key, why in r.set_aside]
    if not lines:
        return ""
    return "SET ASIDE: raw objects not ingested (fix and re-deliver them)\n" + "\n".join(lines)


def copies(summary: RunSummary) -> str:
    """Raw objects skipped as copies of one already ingested (the same bytes under another
    key): not an error, but a producer delivering twice is worth knowing about."""
    lines = [
        f"  {r.label}: {key}: the same content as {same_as}, ingested before"
        for r in summary.results
        for key, same_as in r.copies
    ]
    if not lines:
        return ""
    head = "SKIPPED COPIES: raw objects holding the same bytes as one already ingested (not read)"
    return head + "\n" + "\n".join(lines)


def warnings(summary: RunSummary) -> str:
    found = summary.warnings
    if not found:
        return ""
    lines = ["WARNINGS: warn-level checks that failed (the tables were published)"]
    lines += [f"  {r.label}: {c.name}: {c.message}" for r, c in found]
    return "\n".join(lines)


def failed(summary: RunSummary) -> str:
    out = []
    if summary.having("failed"):
        out.append("FAILED: these tables did not publish (full detail: the run in dagster dev)")
        out += [wrapped(r.label, r.message, r.table) for r in summary.having("failed")]
    stopped = sorted({r.label for r in summary.having("not run")})
    if stopped:
        out.append(
            "NOT RUN: an upstream table did not publish (blocked, failed or switched off): "
            + ", ".join(stopped)
        )
    return "\n".join(out)


def wrapped(label: str, message: str, table: str, width: int = 100) -> str:
    """``  label: message`` wrapped between words, the message whole (its table's name, which
    a step's error starts with, said once).

    >>> print(wrapped("gold.t[2026-01-02]", "gold.t: a long reason " * 3, "gold.t", 40))
      gold.t[2026-01-02]: a long reason
        gold.t: a long reason gold.t: a long
        reason
    """

    text = f"{label}: {message.removeprefix(table + ': ')}"
    return textwrap.fill(text, width, initial_indent="  ", subsequent_indent="    ")


def _number(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


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
