"""Dev environments: ``medallion plan --env``, ``run --env`` (its plan), ``promote``, ``env
list|drop``. An environment is a branch ``env_NAME`` of each table it builds; ``main`` is
untouched until it is promoted."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import click

from medallion_assets.catalog import Catalog
from medallion_assets.cli.common import fail, load, project_option, settings_for
from medallion_assets.environments.plan import DIRECT, NEW, UNCHANGED, Change, EnvPlan, plan
from medallion_assets.environments.promote import NotPromotable, promotion
from medallion_assets.environments.published import built_in, main_of, project_of
from medallion_assets.errors import PermanentError
from medallion_assets.lake import Lake
from medallion_assets.lake.env_refs import check_env_name, env_branch


def env_lake(project: Path, env: str | None = None) -> Lake:
    """The project's lake (as environment ``env`` sees it, each table's metadata read once),
    after any promotion a stop left half-way is finished or rolled back; a bad name is one
    line, exit 2."""
    lake = Lake.of(settings_for(project))
    try:
        if env is not None:
            check_env_name(env)
        if lake.exists():
            lake.environments().recover(lambda m: click.echo(f"warning: {m}", err=True))
    except PermanentError as error:
        fail(str(error))
    # each table read once: the command decides on it, then commits through loads of its own
    return lake.memoized().in_env(env)


def plan_of(lake: Lake, catalog: Catalog) -> EnvPlan:
    return plan(project_of(catalog), main_of(lake, catalog))


def plan_text(env: str, lake: Lake, catalog: Catalog, found: EnvPlan) -> str:
    """The plan, a line per table, then what the environment would build."""
    changes = [c for c in found.changes if c.status != UNCHANGED]
    width = max((len(c.table) for c in changes), default=10)
    lines = [f"environment {env}: the project folder against main ({lake.where()})"]
    for change in changes:
        lines.append(f"  {change.table:<{width}}  {_status(change)}")
        lines += [f"  {'':<{width}}    {why}" for why in change.why]
    same = len(found.changes) - len(changes)
    if same:
        lines.append(f"  unchanged: {same} table(s), read from main (--format json lists them)")
    build = found.to_build
    if not build:
        lines.append("nothing to build: every table is as main has it")
        return "\n".join(lines)
    state = []
    for table in build:
        versions = built_in(lake, env, table)
        code = catalog.datasets[table].code_version
        done = versions and all(v.code_version == code for v in versions)
        state.append(f"{table} ({'built' if done else 'to build'})")
    lines.append(
        f"builds on branch {env_branch(env)}: {len(build)} table(s): {', '.join(state)}; the "
        f"other {len(found.changes) - len(build)} are read from main"
    )
    return "\n".join(lines)


def _status(change: Change) -> str:
    if change.status in (DIRECT, NEW):
        kind = "breaking" if change.breaking else "non-breaking"
        return f"{change.status}, {kind}"
    return change.status


def plan_environment(project: Path, env: str, fmt: str) -> None:
    """``medallion plan --env NAME``."""
    catalog = load(project)
    lake = env_lake(project, env)
    found = plan_of(lake, catalog)
    if fmt == "json":
        body = {
            "environment": env,
            "branch": env_branch(env),
            "tables": [c.as_dict() for c in found.changes],
            "to_build": found.to_build,
        }
        click.echo(json.dumps(body, indent=2))
        return
    click.echo(plan_text(env, lake, catalog, found))


@click.group("env")
def env() -> None:
    """Dev environments: the tables a change builds, on Iceberg branches env_NAME beside main.

    \b
    medallion plan --env dev_anna     # what the project folder changes against main
    medallion run --env dev_anna      # build exactly that on branches env_dev_anna
    medallion diff --env dev_anna     # how its tables differ from main's
    medallion promote dev_anna        # make them main's, without recomputing
    medallion env list                # the environments in the lake
    medallion env drop dev_anna       # remove one: its branches and the files only they held
    """


@env.command("list")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@project_option
def env_list(fmt: str, project: Path) -> None:
    """The environments in the lake: their tables, when each last built, and whether main
    has moved on since."""
    lake = env_lake(project)
    found = lake.environments().environments() if lake.exists() else {}
    if fmt == "json":
        body = {name: [asdict(t) for t in tables] for name, tables in found.items()}
        click.echo(json.dumps(body, indent=2))
        return
    if not found:
        click.echo("no environments (make one with `medallion run --env NAME`)")
        return
    for name, tables in found.items():
        newest = max(t.built_at for t in tables)
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(newest))
        behind = [t.table for t in tables if t.behind_main]
        click.echo(f"{name}: {len(tables)} table(s), last built {when} (branch {env_branch(name)})")
        for table in tables:
            days = f", {len(table.days)} day(s)" if table.days else ""
            click.echo(f"  {table.table}{days}")
        if behind:
            click.echo(f"  main moved on since for: {', '.join(behind)} (run --env again)")


@env.command("drop")
@click.argument("name")
@project_option
def env_drop(name: str, project: Path) -> None:
    """Remove environment NAME: its branches and day tags, and the files only they held."""
    lake = env_lake(project, name)
    held = lake.environments().environments().get(name, []) if lake.exists() else []
    if not held:
        fail(f"there is no environment {name} in the lake (`medallion env list`)")
    freed = lake.environments().drop(name, [t.table for t in held])
    _audit(project, "env", name, f"dropped environment {name} ({len(held)} table(s))")
    click.echo(f"dropped environment {name}: {len(held)} table(s), {freed:,} bytes freed")


@click.command("promote")
@click.argument("name")
@click.option("--keep", is_flag=True, help="Keep the environment's branches after promoting.")
@project_option
def promote(name: str, keep: bool, project: Path) -> None:
    """Make environment NAME's tables current on main without recomputing them: all or none,
    only when it was built from the code now in the project folder on what main has now."""
    catalog = load(project)
    lake = env_lake(project, name)
    found = plan_of(lake, catalog)
    held = lake.environments().tables_of(name, found.to_build) if lake.exists() else []
    try:
        chosen = promotion(lake, catalog, name, found, held)
    except NotPromotable as error:
        fail(str(error))
    if not chosen.moves:
        click.echo("nothing to promote: the project folder builds nothing against main")
        return
    started = time.perf_counter()
    audit = lambda m: _audit(project, "promote", name, m)  # noqa: E731
    lake.environments().promote(name, chosen.moves, audit, keep)
    took = time.perf_counter() - started
    tables = ", ".join(m.table for m in chosen.moves)
    click.echo(f"promoted environment {name} to main in {took:.2f} s: {tables}")
    if not keep:  # main has its versions now: its branches would only pin old snapshots
        click.echo(f"environment {name} is merged: its branches are removed (--keep keeps them)")
    click.echo("the next `medallion run` loads the promoted gold tables into the warehouse")


def _audit(project: Path, kind: str, name: str, message: str) -> None:
    # the control store: loaded only by the commands that write to it
    from medallion_assets.control_plane import ControlPlane

    ControlPlane.of(settings_for(project)).store().record(kind, f"env:{name}", message)


def say_plan(project: Path, catalog: Catalog, env: str, say: Callable[[str], None]) -> list[str]:
    """The plan ``medallion run --env`` follows, said; returns the tables it builds."""
    lake = env_lake(project, env)
    found = plan_of(lake, catalog)
    say(plan_text(env, lake, catalog, found))
    return found.to_build
