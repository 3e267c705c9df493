"""Benchmark H: critical tables under contention, focus vs alone; balanced vs focus.

    python -m bench H        (BENCH_H_ROWS=5000, BENCH_H_LOAD_RUNS=3)

Issue 14's second benchmark. The bars: with low-priority runs saturating the systems, the
critical tables' finish time under ``focus`` is <= 1.1x their time alone; under ``balanced``
the mean finish time over all tables is lower than under ``focus``.

Data: TheWorldShop (``shop_data.prepare``, seed 22, ``BENCH_H_LOAD_RUNS`` days of user events),
without validation rules as in G: the demo data carries deliberate faults (e.g. country code
'UK') that a blocking check keeps out of ``silver.addresses_validated``, and with it two of
``core_daily``'s marts, so with the rules the critical pipeline never finishes.
Bronze is built once, off the clock, by a `medallion run` into a template ``MEDALLION_HOME``
whose silver, gold and warehouse are then removed (``sdp_bench.template_home``, as in G); every
scenario starts from a copy of it, with a fresh Dagster instance written by
``instance.instance_settings`` (the project's priority run coordinator, the profiles' run
limits), served by a real ``dagster dev`` (webserver, daemon with the project's sensors, one
code server; runs in their own processes on the project's threaded executor). Before the first
launch it waits for the ``system_pools`` sensor to have set ``systems.yaml``'s limits. Runs are
launched through GraphQL ``launchRun`` with the tags a schedule gives them but the priority,
which the run coordinator fills in from the profile in force:

- ``alone``:    ``core_daily`` (its sinks hold the critical marts) by itself, under its own
                profile (``pipeline_profiles``: focus);
- ``focus``:    ``medallion control profile all focus``, then ``LOAD_RUNS`` runs of the
                low-priority ``analytics`` pipeline (its daily job, one day each), then
                ``core_daily``;
- ``balanced``: the same launches after ``medallion control profile all balanced``.

The load is the daily tables of ``analytics`` (``silver.user_events``,
``gold.daily_user_events``), a run per day: the pipeline's other table, ``gold.customer_ltv``,
reads silver tables ``core_daily`` builds, which a scenario's lake does not hold at its start.

A scenario ends when every run has finished, pre-empted runs' re-queued relaunches included.
Finish times come from its instance's event log (``finish_times``: each table's last
materialization, in seconds after the scenario's first launch), so every scenario is measured
the same way whatever runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

from bench import report
from bench.dagster_dev import dagster_dev
from bench.sdp_bench import template_home
from bench.shop_data import ShopData, prepare, run_env

ROWS = int(os.environ.get("BENCH_H_ROWS", "5000"))
LOAD_RUNS = int(os.environ.get("BENCH_H_LOAD_RUNS", "3"))  # one per day of user events
CRITICAL_PIPELINE, LOAD_PIPELINE = "core_daily", "analytics"
LOAD_JOB = "analytics"
LOAD_TABLES = ("silver.user_events", "gold.daily_user_events")
SCENARIO_TIMEOUT_S = 900.0
POOLS_TIMEOUT_S = 180.0
BARS = {"critical": 1.1}
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Scenario:
    name: str
    profile: str | None  # `medallion control profile all <profile>` before the launches
    load: bool  # the analytics runs first


SCENARIOS = (
    Scenario("alone", None, load=False),
    Scenario("focus", "focus", load=True),
    Scenario("balanced", "balanced", load=True),
)


@dataclass(frozen=True)
class RunFigures:
    job: str
    status: str
    profile: str  # the medallion/profile tag it ran under
    queued_s: float  # launch to start
    ran_s: float  # start to end


@dataclass(frozen=True)
class Outcome:
    finished: dict[str, float]  # table -> seconds after the first launch
    runs: list[RunFigures]  # in launch order, relaunches included
    critical_run: RunFigures
    seconds: float  # first launch to the last run's end


def finish_times(dagster_home: Path, run_ids: set[str]) -> dict[str, float]:
    """Step key -> seconds from the first of ``run_ids``' launches (its creation in the
    instance) to the step's last ASSET_MATERIALIZATION in those runs. From the launch, not the
    run's start: the time a run waits in the queue is part of when its tables are ready. A
    materialization, not STEP_SUCCESS: a step whose table the profile skips (``skip_below``)
    succeeds without building it."""
    import dagster as dg

    instance = dg.DagsterInstance.from_config(str(dagster_home))
    try:
        records = [r for r in instance.get_run_records() if r.dagster_run.run_id in run_ids]
        if not records:
            return {}
        origin = min(r.create_timestamp.timestamp() for r in records)
        finished: dict[str, float] = {}
        for run_id in run_ids:
            events = instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
            for entry in events:
                step = entry.step_key or ""
                finished[step] = max(finished.get(step, 0.0), entry.timestamp - origin)
        return finished
    finally:
        instance.dispose()


def scenario_runs(instance: Any, launched: list[str]) -> set[str]:
    """The runs the scenario launched and their relaunches (a pre-empted run's re-queued
    rest); not runs anything else started."""
    from medallion_assets.adapters.relaunch import ORIGIN_TAG

    return set(launched) | {
        r.run_id for r in instance.get_runs() if r.tags.get(ORIGIN_TAG) in set(launched)
    }


def run_figures(dagster_home: Path, run_ids: set[str]) -> list[RunFigures]:
    """``run_ids``' runs, in launch order."""
    import dagster as dg

    from medallion_assets.profiles.priority import PROFILE_TAG

    instance = dg.DagsterInstance.from_config(str(dagster_home))
    try:
        records = sorted(
            (r for r in instance.get_run_records() if r.dagster_run.run_id in run_ids),
            key=lambda r: r.create_timestamp,
        )
        figures = []
        for record in records:
            run, created = record.dagster_run, record.create_timestamp.timestamp()
            start = record.start_time or created
            end = record.end_time or start
            partition = run.tags.get("dagster/partition")
            job = f"{run.job_name} {partition}" if partition else run.job_name
            profile = run.tags.get(PROFILE_TAG, "-")
            figures.append(RunFigures(job, run.status.value, profile, start - created, end - start))
        return figures
    finally:
        instance.dispose()


def control_profile(project: Path, env: dict[str, str], profile: str) -> None:
    """`medallion control profile all PROFILE --reason bench`, the operator's way."""
    command = [str(BIN / "medallion"), "control", "profile", "all", profile]
    command += ["--reason", "bench", "--project", str(project)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")


def wait_for_pools(instance: Any, limits: dict[str, int]) -> None:
    """Until the instance's pool limits are systems.yaml's (the system_pools sensor's tick)."""
    deadline = time.monotonic() + POOLS_TIMEOUT_S
    while time.monotonic() < deadline:
        pools = instance.event_log_storage.get_pool_limits()
        if {p.name: p.limit for p in pools if not p.from_default} == limits:
            return
        time.sleep(1.0)
    raise TimeoutError(f"pool limits {limits} not set after {POOLS_TIMEOUT_S:.0f} s")


def wait_until_settled(instance: Any, launched: list[str]) -> None:
    """Until every run has finished, including the relaunch of every run that was cancelled
    (pre-empted: the relaunch sensor re-queues it)."""
    import dagster as dg

    from medallion_assets.adapters.relaunch import ORIGIN_TAG

    deadline = time.monotonic() + SCENARIO_TIMEOUT_S
    while time.monotonic() < deadline:
        runs = instance.get_runs()
        relaunched = {r.tags.get(ORIGIN_TAG) for r in runs}
        waiting = [
            r
            for r in runs
            if not r.is_finished
            or (r.status == dg.DagsterRunStatus.CANCELED and r.run_id not in relaunched)
        ]
        if not waiting and {r.run_id for r in runs} >= set(launched):
            return
        time.sleep(1.0)
    raise TimeoutError(f"runs not finished after {SCENARIO_TIMEOUT_S:.0f} s")


def run_scenario(scenario: Scenario, tmp: Path, data: ShopData, template: Path) -> Outcome:
    import dagster as dg

    from medallion_assets.adapters.instance import instance_settings
    from medallion_assets.catalog import load_catalog
    from medallion_assets.lake import Lake
    from medallion_assets.settings import MedallionSettings
    from medallion_assets.simulate.scheduling import system_limits

    catalog = load_catalog(data.project)
    work = tmp / scenario.name
    shutil.copytree(template, work / "home")
    days = Lake.local(work / "home" / "lake").partitions("bronze.user_events")[-LOAD_RUNS:]
    dagster_home = work / "dagster"
    dagster_home.mkdir(parents=True)
    env = run_env(work / "home", data.s3_root)
    slots = MedallionSettings.from_env(env, data.project).run_slots()  # as project_instance
    settings = instance_settings(catalog.profiles, data.project, slots, dagster_home)
    (dagster_home / "dagster.yaml").write_text(settings)
    env.update(
        MEDALLION_PROJECT=str(data.project),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    )
    if scenario.profile is not None:
        control_profile(data.project, env, scenario.profile)
    with (
        dagster_dev(data.project / "workspace.yaml", dagster_home, env) as dev,
        dg.DagsterInstance.from_config(str(dagster_home)) as instance,
    ):
        dev.stop_schedules()  # a cron time passing during the scenario would add its runs
        wait_for_pools(instance, system_limits(catalog))
        started = time.monotonic()
        launched = []
        if scenario.load:
            for day in days:
                tags = {"pipeline": LOAD_PIPELINE, "dagster/partition": day}
                launched.append(dev.launch(LOAD_JOB, tags, LOAD_TABLES))
        launched.append(dev.launch(CRITICAL_PIPELINE, {"pipeline": CRITICAL_PIPELINE}))
        wait_until_settled(instance, launched)
        seconds = time.monotonic() - started
        ours = scenario_runs(instance, launched)
    from medallion_assets.adapters.translator import step_name

    tables = {step_name(name): name for name in catalog.datasets}
    steps = finish_times(dagster_home, ours)
    runs = run_figures(dagster_home, ours)
    critical = run_figures(dagster_home, {launched[-1]})[0]
    finished = {tables[key]: at for key, at in steps.items() if key in tables}
    return Outcome(finished, runs, critical, seconds)


def main() -> None:
    print(report.heading("H. Contention: critical tables under focus vs alone; balanced vs focus"))
    with tempfile.TemporaryDirectory(prefix="medallion-bench-h-") as name:
        tmp = Path(name)
        data = prepare(tmp, rows=ROWS, days=LOAD_RUNS, checks=False)
        print(f"  raw data (medallion demo-data --rows {ROWS} --days {LOAD_RUNS}, seed 22):")
        print("\n".join("    " + ln for ln in data.summary.splitlines()[-1:]))
        built = time.perf_counter()
        template = template_home(tmp, data)
        print(f"  bronze built once off the clock in {time.perf_counter() - built:.0f} s")
        outcomes = {}
        for scenario in SCENARIOS:
            outcomes[scenario.name] = run_scenario(scenario, tmp, data, template)
            print(f"  {scenario.name}: {outcomes[scenario.name].seconds:.0f} s")
        from medallion_assets.catalog import load_catalog

        catalog = load_catalog(data.project)
        print_outcomes(outcomes, catalog)
        print_verdicts(outcomes, catalog)


def print_outcomes(outcomes: dict[str, Outcome], catalog: Any) -> None:
    names = list(outcomes)
    tables = sorted(
        {t for o in outcomes.values() for t in o.finished},
        key=lambda t: (outcomes["alone"].finished.get(t, float("inf")), t),
    )
    rows = [
        [t, catalog.datasets[t].criticality, *(outcomes[n].finished.get(t) for n in names)]
        for t in tables
    ]
    print("\n  finish time of each table, s after the scenario's first launch (- : not built)")
    print(_indent(report.table(["table", "criticality", *names], rows)))
    print("\n  runs (queued: launch to start; ran: start to end)")
    run_rows = [
        [n, r.job, r.profile, r.status, r.queued_s, r.ran_s]
        for n, o in outcomes.items()
        for r in o.runs
    ]
    headers = ["scenario", "run", "profile", "status", "queued", "ran"]
    print(_indent(report.table(headers, run_rows)))


def print_verdicts(outcomes: dict[str, Outcome], catalog: Any) -> None:
    critical = [t for t, d in catalog.datasets.items() if d.criticality == "critical"]
    alone, focus, balanced = outcomes["alone"], outcomes["focus"], outcomes["balanced"]
    missing = [t for t in critical if t not in alone.finished or t not in focus.finished]
    if missing:
        print(report.verdict("critical finish", None, f"not built: {', '.join(missing)}"))
    else:
        last_alone = max(alone.finished[t] for t in critical)
        last_focus = max(focus.finished[t] for t in critical)
        ratio = last_focus / last_alone
        detail = (
            f"{', '.join(critical)} all ready {last_focus:.1f} s after the first launch under "
            f"focus with load, {last_alone:.1f} s alone: {ratio:.2f}x (bar {BARS['critical']}x); "
            f"the critical run queued {focus.critical_run.queued_s:.1f} s and ran "
            f"{focus.critical_run.ran_s:.1f} s (alone: {alone.critical_run.queued_s:.1f} s, "
            f"{alone.critical_run.ran_s:.1f} s)"
        )
        ok = ratio <= BARS["critical"]
        print(report.verdict("critical finish under focus with load <= 1.1x alone", ok, detail))
    both = sorted(set(focus.finished) & set(balanced.finished))
    only = {
        name: sorted(set(o.finished) - set(both))
        for name, o in (("focus", focus), ("balanced", balanced))
    }
    mean_focus = mean(focus.finished[t] for t in both)
    mean_balanced = mean(balanced.finished[t] for t in both)
    detail = (
        f"over the {len(both)} tables both built: balanced {mean_balanced:.1f} s, "
        f"focus {mean_focus:.1f} s ({mean_balanced / mean_focus:.2f}x); "
        f"built only under focus: {', '.join(only['focus']) or 'none'}; "
        f"only under balanced: {', '.join(only['balanced']) or 'none'}"
    )
    ok = mean_balanced < mean_focus
    print(report.verdict("balanced mean finish < focus mean finish", ok, detail))


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


if __name__ == "__main__":
    main()
