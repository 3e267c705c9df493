"""``medallion simulate``: a day of the catalog's schedule, simulated before it happens."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from medallion_assets.catalog import Catalog
from medallion_assets.cli.common import fail, load, project_option, settings_for
from medallion_assets.lake import Lake
from medallion_assets.recovery.paths import RecoveryGraph
from medallion_assets.simulate.results import Outage, Simulation
from medallion_assets.simulate.simulate import simulate

# A step with no past run: Spark's per-step overhead measured here, plus its rows at a rate a
# 2-core local Spark keeps on the demo. A first guess, replaced once the project has runs.
ESTIMATE_BASE_S = 5.0
ESTIMATE_ROWS_PER_S = 50_000.0
# A run's start-up with no past run: a run worker's process and a local Spark session, here.
ESTIMATE_RUN_START_S = 10.0


@click.command("simulate")
@click.option("--profile", default=None, help="Run every pipeline under this profile.")
@click.option(
    "--down",
    "down",
    multiple=True,
    metavar="NODE[@TIME]",
    help="A node down from TIME (HH:MM UTC of the first day, or an ISO time; default: the "
    "start): a table, source:NAME, replica:NAME or system:NAME. Repeat for several.",
)
@click.option("--from", "start_text", default=None, help="ISO start (default: today 00:00 UTC).")
@click.option("--to", "end_text", default=None, help="ISO end (default: one day after --from).")
@click.option("--max-workers", type=int, default=None, help="Steps of a run at a time.")
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@project_option
def simulate_cmd(
    profile: str | None,
    down: tuple[str, ...],
    start_text: str | None,
    end_text: str | None,
    max_workers: int | None,
    fmt: str,
    project: Path,
) -> None:
    """Simulate the schedule over a day: when each dataset would be ready and by which route,
    each system's peak concurrency against its limit, the exposures late against their
    deadline (exposures.yaml: deadline: "HH:MM") and the reroutes taken around --down nodes.

    Durations come from the project instance's past runs (the median of each table's step),
    else an estimate from the rows of its current version."""
    # the control store (SQLAlchemy): loaded only by the commands that use it
    from medallion_assets.cli.control_cmd import open_plane
    from medallion_assets.profiles.overrides import ProfileOverrides

    catalog = load(project)
    settings = settings_for(project)
    try:
        start = _moment(start_text) if start_text else _today()
        end = _moment(end_text) if end_text else start + timedelta(days=1)
        if end <= start:
            raise ValueError(f"--to {end.isoformat()} is not after --from {start.isoformat()}")
        graph = RecoveryGraph.of(catalog)
        outages = [_outage(graph, text, start) for text in down]
    except ValueError as error:
        fail(str(error))
    past = durations_for(catalog, project, Lake.of(settings))
    durations, measured = past.durations, past.measured
    plane = open_plane(project)
    try:
        result = simulate(
            catalog,
            durations,
            start=start,
            end=end,
            profile=profile,
            overrides=ProfileOverrides(plane.store()).names(),
            outages=outages,
            max_workers=max_workers or settings.workers,
            routes={t: o.route for t, o in plane.store().routes().items()},
            max_runs=settings.run_slots(),
            run_start_s=past.run_start_s,
        )
    except ValueError as error:
        fail(str(error))
    if fmt == "json":
        data = result.as_dict()
        data["durations"] = {
            "measured": measured,
            "estimated": len(durations) - measured,
            "run_start_s": past.run_start_s,
        }
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(_text(result, measured, len(durations) - measured, past.run_start_s), nl=False)


def _today() -> datetime:
    now = datetime.now(UTC)
    return datetime(now.year, now.month, now.day)


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO time (2026-11-23 or 2026-11-23T06:00)") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _outage(graph: RecoveryGraph, text: str, start: datetime) -> Outage:
    node_text, at, when = text.partition("@")
    node = graph.parse_node(node_text)
    if not at:
        return Outage(node, 0.0)
    hour, colon, minute = when.partition(":")
    if colon and hour.isdigit() and minute.isdigit() and "T" not in when:
        if int(hour) > 23 or int(minute) > 59:
            raise ValueError(
                f"--down {text!r}: {when} is not a time of day (HH:MM, 00:00 to 23:59; "
                "for a later day give an ISO time, 2026-11-24T06:00)"
            )
        moment = start.replace(hour=0, minute=0) + timedelta(hours=int(hour), minutes=int(minute))
    else:
        moment = _moment(when)
    return Outage(node, max(0.0, (moment - start).total_seconds()))


@dataclass(frozen=True)
class PastDurations:
    durations: dict[str, float]  # table -> seconds from ready to built
    measured: int  # how many came from past runs (the rest are estimates)
    run_start_s: float  # a run's start-up in past runs (else the estimate)


def durations_for(catalog: Catalog, project: Path, lake: Lake) -> PastDurations:
    """Each table's seconds of one build from ready to built (past runs' median step plus
    their median launch gap, else the estimate), and a run's start-up."""
    # Dagster: loaded only by the commands that run it (`medallion --help` stays quick)
    from medallion_assets.adapters.history import lineage_inputs, step_history
    from medallion_assets.adapters.instance import dagster_home

    history = step_history(dagster_home(project), lineage_inputs(catalog))
    past = history.with_launch()
    durations = {t: past.get(t) or _estimate(lake, t) for t in catalog.datasets}
    measured = sum(1 for t in catalog.datasets if t in past)
    start_up = history.run_start_s if history.runs else ESTIMATE_RUN_START_S
    return PastDurations(durations, measured, start_up)


def _estimate(lake: Lake, table: str) -> float:
    current = lake.current(table)
    rows = current.rows if current is not None else 0
    return ESTIMATE_BASE_S + rows / ESTIMATE_ROWS_PER_S


def _clock(result: Simulation, seconds: float) -> str:
    return (result.start + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def _text(result: Simulation, measured: int, estimated: int, run_start_s: float) -> str:
    lines = [
        f"profile: {result.profile}; {result.start.isoformat()} to {result.end.isoformat()}; "
        f"{result.runs} run(s), {result.preemptions} pre-emption(s); durations: {measured} "
        f"from past runs, {estimated} estimated; a run starts up in {run_start_s:.1f} s",
        "",
        "datasets (first ready):",
    ]
    for d in result.datasets:
        route = "" if d.route == "primary" else f"  via {d.route}"
        state = "  LEFT OUT: no available path" if d.state == "unreachable" else ""
        lines.append(
            f"  {d.table:<34} {d.criticality:<9} {_clock(result, d.finish_s)}  "
            f"({d.pipeline}){route}{state}"
        )
    if result.not_ready:
        lines.append(f"  not built by any run in the window: {', '.join(result.not_ready)}")
    lines += ["", "systems (peak steps at once / limit):"]
    for s in result.systems:
        limit = "-" if s.limit is None else str(s.limit)
        over = "  OVER ITS LIMIT" if s.limit is not None and s.peak > s.limit else ""
        lines.append(f"  {s.system:<20} {s.peak} / {limit}{over}")
    lines += ["", "late exposures:"]
    lines += [
        f"  {e.exposure}: due {_clock(result, e.deadline_s)}, waiting for "
        f"{', '.join(e.waiting_for)}"
        for e in result.late_exposures
    ] or ["  none"]
    if result.reroutes:
        lines += ["", "reroutes:"]
        lines += [
            f"  {_clock(result, r.at_s)}  {r.table} -> {r.route} around {', '.join(r.around)}"
            for r in result.reroutes
        ]
    return "\n".join(lines) + "\n"
