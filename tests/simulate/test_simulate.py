"""``medallion simulate``: the schedule of a day replayed with durations, against schedules
worked out by hand (a chain, the run queue, a system's limit, pre-emption, an outage), and on
the demo: focus makes the critical datasets ready earlier than balanced, neither exceeds a
system's limit, and an exposure with a deadline the schedule misses is reported late."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from medallion_assets.catalog import load_catalog
from medallion_assets.cli import cli
from medallion_assets.simulate.results import Outage
from medallion_assets.simulate.simulate import simulate, simulate_runs
from tests.conftest import copy_demo_project

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"
DAY = datetime(2026, 1, 5)  # a Monday
CHAIN = {"bronze.orders": 10.0, "silver.orders_clean": 20.0, "gold.revenue": 5.0}
PROFILES = {
    "active": "balanced",
    "profiles": {
        "balanced": {"settings": {"max_concurrent_runs": 1}},
        "focus": {
            "settings": {
                "max_concurrent_runs": 1,
                "criticality_priority": {"critical": 10, "high": 5, "normal": 1, "low": 0},
                "preempt_low_priority": True,
                "spread_over_systems": False,
            }
        },
    },
}


def minimal(tmp_path: Path, pipelines: list[dict], profiles: dict | None = None) -> Path:
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    (root / "metadata" / "pipelines.yaml").write_text(yaml.safe_dump({"pipelines": pipelines}))
    if profiles is not None:
        (root / "metadata" / "profiles.yaml").write_text(yaml.safe_dump(profiles))
    return root


def test_a_chain_runs_at_its_tick_one_step_after_the_other(tmp_path):
    root = minimal(
        tmp_path,
        [
            {
                "id": "daily",
                "schedule": "0 6 * * *",
                "select": {"layers": ["bronze", "silver", "gold"]},
            }
        ],
    )
    result = simulate(load_catalog(root, use_cache=False), CHAIN, start=DAY)
    six = 6 * 3600
    assert [(d.table, d.start_s, d.finish_s) for d in result.datasets] == [
        ("bronze.orders", six, six + 10),
        ("silver.orders_clean", six + 10, six + 30),
        ("gold.revenue", six + 30, six + 35),
    ]
    assert result.runs == 1
    peaks = {s.system: (s.peak, s.limit) for s in result.systems}
    assert peaks["s3_raw"] == (1, 2) and peaks["warehouse"] == (1, 1)
    hourly = minimal(
        tmp_path / "h", [{"id": "h", "schedule": "0 */6 * * *", "select": {"layers": ["bronze"]}}]
    )
    assert simulate(load_catalog(hourly, use_cache=False), CHAIN, start=DAY).runs == 4


def low_and_urgent(tmp_path: Path, profiles: dict):
    """``low`` (bronze, silver) at 06:00 and ``urgent`` (gold.revenue, critical, and its
    upstream) at 06:01, under ``profiles``."""
    pipelines = [
        {"id": "low", "schedule": "0 6 * * *", "select": {"layers": ["bronze", "silver"]}},
        {"id": "urgent", "schedule": "1 6 * * *", "select": {"sinks": ["gold.revenue"]}},
    ]
    root = minimal(tmp_path, pipelines, profiles)
    datasets = root / "metadata" / "datasets.yaml"
    data = yaml.safe_load(datasets.read_text())
    data["datasets"]["gold.revenue"] = {"criticality": "critical"}
    datasets.write_text(yaml.safe_dump(data))
    return load_catalog(root, use_cache=False)


def test_a_run_waits_in_the_queue_and_focus_pre_empts_a_lower_run(tmp_path):
    catalog = low_and_urgent(tmp_path, PROFILES)
    slow = {**CHAIN, "silver.orders_clean": 100.0}
    six = 6 * 3600

    # balanced: one run at a time, no pre-emption: urgent waits for low to finish at 6:00+110
    calm = simulate(catalog, slow, start=DAY, profile="balanced")
    assert calm.finish_of("gold.revenue") == six + 110 + 10 + 100 + 5
    assert calm.preemptions == 0
    # focus: urgent (critical) arrives at 06:01 and pre-empts low, whose silver step is lost
    rushed = simulate(catalog, slow, start=DAY, profile="focus")
    assert rushed.preemptions == 1
    assert rushed.finish_of("gold.revenue") == six + 60 + 10 + 100 + 5
    assert rushed.finish_of("gold.revenue") < calm.finish_of("gold.revenue")


def test_a_run_starts_up_before_its_first_step_and_the_machine_bounds_the_runs(tmp_path):
    two_runs = {**PROFILES, "profiles": {**PROFILES["profiles"]}}
    two_runs["profiles"]["balanced"] = {"settings": {"max_concurrent_runs": 2}}
    catalog = low_and_urgent(tmp_path, two_runs)
    slow = {**CHAIN, "silver.orders_clean": 100.0}
    six = 6 * 3600

    # Two runs at once, each 7 s of start-up: urgent (06:01) builds its own chain beside low.
    beside = simulate(catalog, slow, start=DAY, profile="balanced", run_start_s=7)
    assert beside.finish_of("bronze.orders") == six + 7 + 10
    assert beside.finish_of("gold.revenue") == six + 60 + 7 + 10 + 100 + 5
    # The machine takes one run: urgent waits for low (06:00 + 7 + 10 + 100), then starts up.
    bound = simulate(catalog, slow, start=DAY, profile="balanced", run_start_s=7, max_runs=1)
    assert bound.finish_of("gold.revenue") == six + 117 + 7 + 10 + 100 + 5
    # Focus pre-empts low for urgent; low, started anew after urgent, pays its start-up again.
    rushed = simulate(catalog, slow, start=DAY, profile="focus", run_start_s=7)
    urgent_done = six + 60 + 7 + 10 + 100 + 5
    assert rushed.preemptions == 1 and rushed.finish_of("gold.revenue") == urgent_done
    assert rushed.makespan_s == urgent_done + 7 + 100  # low's lost silver step, rebuilt
    with pytest.raises(ValueError, match="max_runs is 0"):
        simulate(catalog, slow, start=DAY, max_runs=0)


def test_runs_in_one_process_share_its_workers(tmp_path):
    two_runs = {"active": "balanced", "profiles": {"balanced": {"settings": {
        "max_concurrent_runs": 2}}}}  # fmt: skip
    root = minimal(tmp_path, [{"id": "d", "select": {"layers": ["bronze"]}}], two_runs)
    catalog = load_catalog(root, use_cache=False)
    runs = [("a", ["bronze.orders"]), ("b", ["silver.orders_clean"])]
    apart = simulate_runs(catalog, CHAIN, runs, max_workers=1)
    assert apart.makespan_s == 20  # each run its own worker: side by side
    shared = simulate_runs(catalog, CHAIN, runs, max_workers=1, shared_workers=True)
    assert shared.makespan_s == 30  # one worker for both: one after the other
    started = simulate_runs(catalog, CHAIN, runs, max_workers=2, shared_workers=True,
                            run_start_s=4)  # fmt: skip
    assert started.makespan_s == 24


def test_a_systems_limit_serialises_its_steps(tmp_path):
    root = minimal(
        tmp_path, [{"id": "d", "schedule": "0 1 * * *", "select": {"layers": ["bronze"]}}]
    )
    sources = root / "metadata" / "sources.yaml"
    data = yaml.safe_load(sources.read_text())
    for n in range(3):
        data["sources"][f"more{n}"] = {**data["sources"]["orders"], "prefix": f"more{n}/"}
        (root / "sql" / "bronze" / f"more{n}.sql").write_text(
            (root / "sql" / "bronze" / "orders.sql")
            .read_text()
            .replace("raw.orders", f"raw.more{n}")
        )
    sources.write_text(yaml.safe_dump(data))
    catalog = load_catalog(root, use_cache=False)
    durations = dict.fromkeys(catalog.datasets, 10.0)
    result = simulate(catalog, durations, start=DAY, max_workers=4)
    bronze = sorted(d.finish_s - 3600 for d in result.datasets if d.table.startswith("bronze."))
    assert bronze == [10, 10, 20, 20]  # s3_raw holds 2 at a time
    assert {s.system: s.peak for s in result.systems}["s3_raw"] == 2


def test_an_outage_reroutes_from_its_moment_and_leaves_out_what_nothing_produces(demo_catalog):
    durations = dict.fromkeys(demo_catalog.datasets, 20.0)
    later = simulate(
        demo_catalog, durations, start=DAY, outages=[Outage("source:customers", 12 * 3600)]
    )
    first = {d.table: d for d in later.datasets}
    assert first["bronze.customers"].route == "primary"  # built before noon on its primary
    assert [(r.at_s, r.table, r.route) for r in later.reroutes] == [
        (12 * 3600, "bronze.customers", "customers_us_east_replica")
    ]
    early = simulate(demo_catalog, durations, start=DAY, outages=[Outage("source:customers")])
    moved = {d.table: d for d in early.datasets}["bronze.customers"]
    assert moved.route == "customers_us_east_replica"
    assert moved.path[:2] == ("replica:customers_us_east_replica", "system:s3_raw_replica")
    gone = simulate(demo_catalog, durations, start=DAY, outages=[Outage("source:orders")])
    left = {d.table: d for d in gone.datasets}["bronze.orders"]
    assert left.state == "unreachable" and left.finish_s == left.start_s
    states = {d.table: d.state for d in gone.datasets}
    assert states["silver.orders_usd"] == "unreachable"  # what reads it keeps its version too
    assert states["bronze.customers"] == "built"


def test_on_the_demo_focus_readies_the_critical_datasets_earlier_within_every_limit(
    demo_catalog,
):
    durations = {t: 30.0 + 10 * n % 40 for n, t in enumerate(demo_catalog.datasets)}

    def critical_mean(result) -> float:
        done = [d.finish_s for d in result.datasets if d.criticality == "critical"]
        assert done
        return sum(done) / len(done)

    balanced = simulate(demo_catalog, durations, start=DAY, profile="balanced")
    focus = simulate(demo_catalog, durations, start=DAY, profile="focus")
    assert critical_mean(focus) < critical_mean(balanced)
    for result in (balanced, focus):
        for system in result.systems:
            assert system.limit is None or system.peak <= system.limit, system


def test_the_command_reports_late_exposures_in_the_issues_json_shape(tmp_path, monkeypatch):
    root = copy_demo_project(tmp_path / "demo")
    monkeypatch.setenv("MEDALLION_HOME", str(root / ".medallion"))
    monkeypatch.delenv("MEDALLION_CONTROL_URL", raising=False)
    exposures = root / "metadata" / "exposures.yaml"
    data = yaml.safe_load(exposures.read_text())
    data["exposures"][0]["deadline"] = "02:00"  # core_daily starts at 02:30
    exposures.write_text(yaml.safe_dump(data, sort_keys=False))
    name = data["exposures"][0]["name"]

    def run(*args: str):
        return CliRunner().invoke(cli, ["simulate", *args, "--project", str(root)])

    done = run(
        "--from",
        "2026-01-05",
        "--profile",
        "focus",
        "--down",
        "source:customers@03:00",
        "--format",
        "json",
    )
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert found["profile"] == "focus"
    assert {"table", "criticality", "finish_s", "path"} <= set(found["datasets"][0])
    assert {"system", "peak", "limit"} == set(found["systems"][0])
    assert [e["exposure"] for e in found["late_exposures"]] == [name]
    assert found["reroutes"][0]["at_s"] == 3 * 3600
    catalog = load_catalog(root, use_cache=False)
    from medallion_assets.cli.simulate_cmd import ESTIMATE_RUN_START_S

    assert found["durations"] == {
        "measured": 0,
        "estimated": len(catalog.datasets),
        "run_start_s": ESTIMATE_RUN_START_S,
    }
    assert len(found["datasets"]) + len(found["not_ready"]) == len(catalog.datasets)
    text = run("--from", "2026-01-05")
    assert text.exit_code == 0, text.output
    assert f"{name}: due 2026-01-05 02:00:00" in text.output
    bad = run("--down", "source:nope")
    assert bad.exit_code == 2 and "no source named 'nope'" in bad.output
    wrong = run("--profile", "fast")
    assert wrong.exit_code == 2 and "no profile named 'fast'" in wrong.output
    for when in ("25:00", "07:99"):
        late = run("--down", f"source:orders@{when}")
        assert late.exit_code == 2 and f"{when} is not a time of day" in late.output


@pytest.mark.parametrize("deadline", ["6:00", "24:00", "06:60", "noon"])
def test_a_deadline_must_be_a_time_of_day(tmp_path, deadline):
    from medallion_assets.catalog import CatalogError

    root = copy_demo_project(tmp_path / "demo")
    exposures = root / "metadata" / "exposures.yaml"
    data = yaml.safe_load(exposures.read_text())
    data["exposures"][0]["deadline"] = deadline
    exposures.write_text(yaml.safe_dump(data, sort_keys=False))
    if deadline == "6:00":
        assert load_catalog(root, use_cache=False).exposures  # one-digit hours are fine
        return
    with pytest.raises(CatalogError, match="is not a time of day HH:MM"):
        load_catalog(root, use_cache=False)
