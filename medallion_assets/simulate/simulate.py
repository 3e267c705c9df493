"""What the catalog's schedule would do over a day: a discrete-event simulation.

Every enabled pipeline with a schedule requests a run at each of its cron ticks in the window.
A run waits in the queue (highest priority first, then oldest) until fewer runs are going than
its profile's ``max_concurrent_runs`` and the machine's ``max_runs``, then starts up
(``run_start_s``: its process and its Spark) before its first step. A focus run
(``preempt_low_priority``) that finds no room pre-empts the lowest-priority run going, whose
steps in flight are lost and which goes back to the queue with what it finished kept. Inside a
run, ready steps start up to ``max_workers`` at a time, chosen by the run's ``SchedulingPolicy``
(priority and reserved slots under focus, least loaded systems under balanced, ``skip_below``
left out) against every system's ``max_concurrent_jobs``, counted over all runs. A step takes
its table's duration (the caller's: past runs, else an estimate). Outages (``Outage``: a node
down from a moment on) are met the way the running system meets them: recovery moves each
table that needs a down node to its cheapest available path (``recovery.plan.plan_recovery``), which
changes the systems its step holds; a table no path produces is left out, and its readers go on
with its published version.
Pure: durations and the window come in, nothing is read or written; ``results`` holds what it
found.

    result = simulate(catalog, durations, start=datetime(2026, 1, 5), profile="focus")
    result.as_dict()["datasets"][0]  # {"table": ..., "finish_s": ..., "path": [...]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.cron import fire_times
from medallion_assets.profiles.priority import run_priority
from medallion_assets.profiles.profiles import effective_profile
from medallion_assets.simulate.engine import NO_PROFILE, Simulator
from medallion_assets.simulate.results import (
    Outage,
    Simulation,
    late_exposures,
)
from medallion_assets.simulate.runs import RequestedRun


def simulate(
    catalog: Catalog,
    durations: Mapping[str, float],
    *,
    start: datetime,
    end: datetime | None = None,
    profile: str | None = None,
    overrides: Mapping[str, str] | None = None,
    outages: Sequence[Outage] = (),
    max_workers: int = 2,
    routes: Mapping[str, str] | None = None,
    max_runs: int | None = None,
    run_start_s: float = 0.0,
) -> Simulation:
    """Simulate ``[start, end)`` (default: one day). ``durations``: table -> seconds of one
    step (a table missing builds in 0 s). ``profile`` forces one profile on every pipeline;
    else each runs under the one in force (``overrides``: the control store's, pipeline or
    ``all`` -> profile). ``routes``: the routes in force at the start (table -> route).
    ``max_runs``: runs the machine takes at once whatever the profiles allow (a local Spark's
    ``run_slots``); ``run_start_s``: seconds from a run leaving the queue to its first step
    (its process and Spark starting), paid again by a pre-empted run started anew."""
    end = end or start + timedelta(days=1)
    if max_workers < 1:
        raise ValueError(f"max_workers is {max_workers}: give at least 1 worker")
    profiles = catalog.profiles
    if profile is not None and (profiles is None or profile not in profiles.profiles):
        known = ", ".join(profiles.profiles) if profiles is not None else "none"
        raise ValueError(f"no profile named {profile!r} in profiles.yaml (defined: {known})")
    sim = Simulator(catalog, durations, max_workers, dict(routes or {}), max_runs, run_start_s)
    window = (end - start).total_seconds()
    for pipeline_id, pipeline in catalog.pipelines.items():
        if not pipeline.enabled or not pipeline.schedule:
            continue
        if profiles is None:
            name, settings = "none", NO_PROFILE
        else:
            name = profile or effective_profile(profiles, pipeline_id, overrides or {}).name
            settings = profiles.profiles[name].settings
        tables = list(catalog.pipeline_datasets(pipeline_id))
        levels = [catalog.datasets[t].criticality for t in tables]
        priority = run_priority(profiles, levels, {pipeline_id: name}).priority
        for moment in fire_times(pipeline.schedule, start, end):
            at = (moment - start).total_seconds()
            sim.push(at, "request", RequestedRun(pipeline_id, tables, name, settings, priority))
    for outage in outages:
        sim.push(max(0.0, outage.at_s), "down", outage.node)
    sim.run(window)
    return Simulation(
        profile or "in force",
        start,
        end,
        sim.run_count,
        tuple(sim.results()),
        tuple(sim.peaks()),
        tuple(late_exposures(catalog, sim.first, start, end)),
        tuple(sim.reroutes),
        sim.preemptions,
        tuple(t for t in catalog.datasets if t not in sim.first),
        sim.last,
        sim.builds,
    )


def simulate_runs(
    catalog: Catalog,
    durations: Mapping[str, float],
    runs: Sequence[tuple[str, Sequence[str]]],
    profile: str | None = None,
    max_workers: int = 2,
    max_runs: int | None = None,
    run_start_s: float = 0.0,
    shared_workers: bool = False,
) -> Simulation:
    """``runs`` (a name, its tables) all requested at once, under ``profile`` (default: the
    active one), as a backfill's are; ``makespan_s`` is when the last one ends. ``max_runs``
    and ``run_start_s`` as in ``simulate``; ``shared_workers``: the runs share ``max_workers``
    (one process's threads over one Spark, as `medallion run` runs them) rather than each run
    having its own."""
    profiles = catalog.profiles
    if profiles is None:
        name, settings = "none", NO_PROFILE
    else:
        name = profile or profiles.active
        settings = profiles.profiles[name].settings
    sim = Simulator(catalog, durations, max_workers, {}, max_runs, run_start_s)
    sim.shared_workers = shared_workers
    for label, tables in runs:
        levels = [catalog.datasets[t].criticality for t in tables]
        priority = run_priority(profiles, levels, {}).priority if profiles else 0
        sim.push(0.0, "request", RequestedRun(label, list(tables), name, settings, priority))
    sim.run(float("inf"))
    start = datetime(2000, 1, 1)
    return Simulation(
        name,
        start,
        start,
        sim.run_count,
        tuple(sim.results()),
        tuple(sim.peaks()),
        (),
        (),
        sim.preemptions,
        makespan_s=sim.last,
    )
