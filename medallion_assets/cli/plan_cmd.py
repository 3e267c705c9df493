"""``medallion plan``: the execution levels, and how a run would go under a profile: the order
steps start in, each system's concurrency, what would wait and what would be skipped."""

from __future__ import annotations

import json
from pathlib import Path

import click

from medallion_assets.catalog import Catalog
from medallion_assets.cli.common import fail, load, max_workers_option, project_option, settings_for
from medallion_assets.profiles.overrides import ProfileOverrides
from medallion_assets.profiles.profiles import ALL, EffectiveProfile, effective_profile
from medallion_assets.simulate.schedule import Schedule, simulate
from medallion_assets.simulate.scheduling import SchedulingPolicy

OPTION = "option"  # the source of a profile named by --profile


@click.command()
@click.option(
    "--profile",
    "profile_name",
    default=None,
    help="Plan under this profile of profiles.yaml (default: the one in force, with why).",
)
@click.option(
    "--pipeline",
    default=None,
    help="Plan this pipeline's tables under its profile (default: every table).",
)
@max_workers_option
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--env",
    "env",
    default=None,
    metavar="NAME",
    help="Instead: what the project folder changes against main, table by table (changed "
    "directly, breaking or not, or because an input changed), and what `medallion run --env "
    "NAME` would build on the tables' branches env_NAME.",
)
@project_option
def plan(
    profile_name: str | None,
    pipeline: str | None,
    max_workers: int | None,
    fmt: str,
    env: str | None,
    project: Path,
) -> None:
    """Execution levels (the tables of a level can run in parallel), then the run under the
    profile: start order, concurrency per system, what waits and what is skipped. With
    --env NAME: a dev environment's plan against main."""
    if env is not None:
        # the lake: loaded only by the plan of an environment
        from medallion_assets.cli.env_cmd import plan_environment

        plan_environment(project, env, fmt)
        return
    catalog = load(project)
    levels = catalog.lineage.levels()
    selected = _selected(catalog, pipeline)
    chosen = _profile(catalog, project, pipeline, profile_name)
    workers = max_workers or settings_for(project).workers
    schedule = None
    if chosen is not None and catalog.profiles is not None:
        settings = chosen.settings(catalog.profiles)
        policy = SchedulingPolicy.from_catalog(catalog, settings, profile=chosen.name)
        schedule = simulate(policy, selected, workers)
    if fmt == "json":
        body: dict[str, object] = {"levels": levels, "pipeline": pipeline, "tables": len(selected)}
        if chosen is not None and schedule is not None:
            body["profile"] = {"name": chosen.name, "source": chosen.source}
            body["schedule"] = schedule.as_dict()
        click.echo(json.dumps(body, indent=2))
        return
    for i, level in enumerate(levels, 1):
        click.echo(f"level {i}: {', '.join(level)}")
    if chosen is None or schedule is None:
        click.echo("no metadata/profiles.yaml: no profile orders the run")
        return
    whose = f"pipeline {pipeline}" if pipeline else "every table"
    click.echo(
        f"\nprofile {_describe(chosen)}; {whose}: {len(selected)} table(s), {workers} worker(s)"
    )
    click.echo(schedule_text(schedule), nl=False)


def _describe(chosen: EffectiveProfile) -> str:
    return f"{chosen.name} (--profile)" if chosen.source == OPTION else chosen.describe()


def _selected(catalog: Catalog, pipeline: str | None) -> list[str]:
    if pipeline is None:
        return list(catalog.datasets)
    if pipeline not in catalog.pipelines:
        fail(
            f"unknown pipeline {pipeline!r}: metadata/pipelines.yaml defines "
            f"{', '.join(sorted(catalog.pipelines)) or 'none'}"
        )
    return list(catalog.pipeline_datasets(pipeline))


def _profile(
    catalog: Catalog, project: Path, pipeline: str | None, name: str | None
) -> EffectiveProfile | None:
    """The profile named by ``--profile``, else the one in force for the pipeline (or, for
    every table, the one in force for all pipelines) with operators' overrides."""
    profiles = catalog.profiles
    if profiles is None:
        if name is not None:
            fail("the project has no metadata/profiles.yaml: define the profiles there first")
        return None
    if name is not None:
        if name not in profiles.profiles:
            fail(
                f"unknown profile {name!r}: metadata/profiles.yaml defines "
                f"{', '.join(sorted(profiles.profiles))}"
            )
        return EffectiveProfile(pipeline or ALL, name, OPTION)
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.cli.control_cmd import open_plane

    overrides = ProfileOverrides(open_plane(project).store()).names()
    return effective_profile(profiles, pipeline or ALL, overrides)


def schedule_text(schedule: Schedule) -> str:
    lines = ["each step counted as one tick: real steps differ in length", "start order:"]
    width = max((len(s.table) for s in schedule.starts), default=0)
    for start in schedule.starts:
        lines.append(
            f"  tick {start.at:<3} {start.table:<{width}}  {start.criticality:<8}  "
            f"{', '.join(start.systems)}"
        )
    critical = schedule.done_after("critical")
    lines.append(
        f"done after {schedule.done_after()} tick(s)"
        + (f"; the critical tables after {critical}" if critical else "")
    )
    lines += ["concurrency per system (steps at each tick):", _systems_text(schedule)]
    lines.append("waits (ready, not started):" if schedule.waits else "waits: none")
    lines += [f"  {line}" for line in _waits_text(schedule)]
    lines.append("skipped:" if schedule.skipped else "skipped: none")
    lines += [f"  {table}: {why}" for table, why in schedule.skipped.items()]
    return "\n".join(lines) + "\n"


def _systems_text(schedule: Schedule) -> str:
    rows = [("system", "limit", "reserved", "peak", "per tick")]
    for system in schedule.systems:
        limit = schedule.limits.get(system)
        per_tick = " ".join(str(t.per_system.get(system, 0)) for t in schedule.ticks)
        rows.append(
            (
                system,
                str(limit) if limit is not None else "none",
                str(schedule.reserved.get(system, 0)),
                str(schedule.peak(system)),
                per_tick,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        "  "
        + "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True))
        + "  "
        + row[4]
        for row in rows
    )


def _waits_text(schedule: Schedule) -> list[str]:
    """One line per table that waited: each reason with the ticks it held."""
    by_table: dict[str, list[str]] = {}
    for wait in schedule.waits:
        by_table.setdefault(wait.table, []).append(f"{wait.reason} ({wait.when()})")
    return [f"{table}: {'; '.join(reasons)}" for table, reasons in by_table.items()]
