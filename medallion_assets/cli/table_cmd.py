"""``medallion table history|rollback|repair|gc``: a lake table's versions (Iceberg snapshots),
making an earlier one current again, audited, pointing the catalog at the newest metadata file
left, and removing what no version needs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from medallion_assets.cli.common import fail, load, operator, project_option, settings_for
from medallion_assets.cli.run_cmd import with_spark_log


@click.group("table")
def table() -> None:
    """A lake table's versions: list them, roll back to one, remove what none needs."""


@table.command("history")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per snapshot.")
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every snapshot the table still holds: also those a rollback moved main away from "
    "(marked 'rolled away') and those only a day's tag or a branch holds.",
)
@project_option
def history(name: str, as_json: bool, every: bool, project: Path) -> None:
    """The snapshots of NAME's main branch, newest first: when, operation, the table's rows
    after it, the run and the code version that wrote it, the day it wrote."""
    # Spark and the lake: loaded only by the commands that use them
    from medallion_assets.lake import Lake

    _known(project, name)
    entries = Lake.of(settings_for(project)).history(name, every)
    if not entries:
        fail(f"{name} has no published version in the lake yet: run it first")
    if as_json:
        for e in entries:
            click.echo(json.dumps(e.as_dict(), sort_keys=True))
        return
    click.echo(
        f"{'snapshot':<20} {'committed (UTC)':<19} {'operation':<9} {'rows':>10}  "
        f"{'day':<10} {'code':<12} run"
    )
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.committed_at))
        mark = " (current)" if e.current else "" if e.on_main else " (rolled away)"
        if e.refs and not e.on_main:
            mark = f" (off main: {', '.join(e.refs)})"
        click.echo(
            f"{e.snapshot_id:<20} {when:<19} {e.operation:<9} {e.rows:>10,}  "
            f"{e.partition or '-':<10} {e.code_version[:12] or '-':<12} {e.run_id or '-'}{mark}"
        )


@table.command("rollback")
@click.argument("name")
@click.option("--to", "snapshot", required=True, type=int, help="Snapshot id (see history).")
@click.option("--partition", default=None, help="The day, for a daily table.")
@click.option("--reason", required=True, help="Why (kept in the audit log).")
@click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
@project_option
def rollback(
    name: str,
    snapshot: int,
    partition: str | None,
    reason: str,
    changed_by: str | None,
    project: Path,
) -> None:
    """Make NAME (its day PARTITION) what it was at a snapshot: readers and the next run see
    that version as current; a later change of its code or inputs rebuilds it as usual."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.control_plane import ControlPlane
    from medallion_assets.jvm.driver import spark_jars
    from medallion_assets.lake import Lake
    from medallion_assets.runtime.spark_session import spark_session

    _known(project, name)
    settings = settings_for(project)
    store = ControlPlane.of(settings).store()  # an unusable store: one line before any change
    lake = Lake.of(settings)
    if not lake.history(name):
        fail(f"{name} has no published version in the lake yet: nothing to roll back")
    spark_jars(settings)

    spark = spark_session(with_spark_log(settings))
    before = lake.current(name, partition)
    version = lake.rollback(spark, name, snapshot, partition)
    who = operator(changed_by)
    where = f"{name}[{partition}]" if partition else name
    store.record(
        "rollback",
        f"dataset:{name}",
        f"{where} rolled back to snapshot {snapshot} by {who}: {reason}",
        details={
            "snapshot": snapshot,
            "partition": partition,
            "previous_version": before.version_id if before else None,
            "version": version.version_id,
            "by": who,
        },
    )
    click.echo(
        f"{where} rolled back to snapshot {snapshot}: version {version.version_id} "
        f"({version.rows:,} rows) is current; audited as by {who}: {reason}"
    )


@table.command("repair")
@click.argument("name")
@click.option("--reason", required=True, help="Why (kept in the audit log).")
@click.option("--by", "changed_by", default=None, help="Who (default: user@host).")
@project_option
def repair(name: str, reason: str, changed_by: str | None, project: Path) -> None:
    """Point the lake's catalog at NAME's newest metadata file still there, when the one it
    points at is gone (a run says LAKE_METADATA_LOST): the table is then as that commit left
    it, and the next run rebuilds what changed since. Audited. A JDBC (SQL) catalog.

    \b
    medallion table repair silver.orders_usd --reason "metadata file deleted by a cleanup"
    """
    # the control store and the lake: loaded only by the commands that use them
    from medallion_assets.control_plane import ControlPlane
    from medallion_assets.lake import Lake
    from medallion_assets.lake.repair import RepairNotPossible

    _known(project, name)
    settings = settings_for(project)
    store = ControlPlane.of(settings).store()  # an unusable store: one line before any change
    try:
        lost, now = Lake.of(settings).repair(name)
    except RepairNotPossible as error:
        fail(str(error))
    who = operator(changed_by)
    message = f"{name}: the catalog pointed at {lost}, which is gone; it now points at {now}"
    store.record("repair", f"dataset:{name}", f"{message} ({who}: {reason})")
    click.echo(f"{message}; audited as by {who}: {reason}")


@table.command("gc")
@click.argument("names", nargs=-1)
@click.option("--dry-run", is_flag=True, help="Say what would be removed; remove nothing.")
@click.option(
    "--older-than",
    "hours",
    type=click.FloatRange(min=1),
    default=72.0,
    show_default=True,
    help="Only files older than this many hours: a build in progress writes its files before "
    "it commits them.",
)
@project_option
def gc(names: tuple[str, ...], dry_run: bool, hours: float, project: Path) -> None:
    """Remove what no version of a table needs (every table, or NAMES): files under its
    location that no snapshot, manifest or metadata file refers to (left by builds killed
    before their commit, or by other engines), and staging branches of killed builds, each
    pinning an old snapshot. Published versions, their days' tags and the history a rollback
    can go back to are kept.

    \b
    medallion table gc --dry-run
    medallion table gc silver.orders_usd
    """
    # the lake (pyiceberg): loaded only by the commands that use it
    from medallion_assets.lake import Lake

    for name in names:
        _known(project, name)
    lake = Lake.of(settings_for(project))
    verb = "would remove" if dry_run else "removed"
    files = freed = branches = 0
    for name in names or tuple(load(project).datasets):
        found = lake.orphans(name, hours * 3600)
        dropped = lake.drop_stale_staging(name, dry_run=dry_run)
        for orphan in found:
            click.echo(f"{name}: {verb} {orphan.path} ({orphan.size:,} bytes)")
        if dropped:
            click.echo(f"{name}: {verb} {dropped} staging branch(es) of killed builds")
        if found and not dry_run:
            lake.remove_orphans(name, found)
        files, freed = files + len(found), freed + sum(o.size for o in found)
        branches += dropped
    click.echo(
        f"{verb} {files} orphan file(s), {freed:,} bytes, and {branches} staging branch(es)"
        + ("; run again without --dry-run to remove them" if dry_run and files + branches else "")
    )


def _known(project: Path, name: str) -> None:
    catalog = load(project)
    if name not in catalog.datasets and not name.endswith("__quarantine"):
        known = ", ".join(sorted(catalog.datasets)[:8])
        fail(f"{name} is not a table of this project (e.g. {known}); see `medallion lineage`")
