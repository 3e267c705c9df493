"""``medallion plan`` under a profile: the profile in force (and where it comes from) or the
one named, the start order, the concurrency per system, what waits and what is skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from medallion_assets.catalog import load_catalog
from medallion_assets.cli import cli
from medallion_assets.simulate.schedule import simulate
from medallion_assets.simulate.scheduling import SchedulingPolicy
from tests.conftest import copy_demo_project


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_demo_project(tmp_path_factory.mktemp("plan") / "theworldshop")


def plan(project: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["plan", *args, "--project", str(project)])


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def section(text: str, title: str) -> list[str]:
    """The indented lines under ``title``."""
    lines = text.splitlines()
    start = lines.index(title) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


def test_plan_names_the_profile_in_force_and_where_it_comes_from(project):
    everything = ok(plan(project, "--max-workers", "2"))
    assert "profile balanced (profiles.yaml: active); every table: 25 table(s), 2 worker(s)" in (
        everything
    )
    core = ok(plan(project, "--pipeline", "core_daily", "--max-workers", "2"))
    assert "profile focus (profiles.yaml: pipeline_profiles.core_daily); pipeline core_daily" in (
        core
    )
    named = ok(plan(project, "--pipeline", "core_daily", "--profile", "balanced"))
    assert "profile balanced (--profile); pipeline core_daily" in named


def test_an_operators_override_changes_the_plan(tmp_path):
    project = copy_demo_project(tmp_path / "theworldshop")
    runner = CliRunner()
    done = runner.invoke(
        cli,
        ["control", "profile", "all", "focus", "--reason", "incident 7", "--project", str(project)],
    )
    assert done.exit_code == 0, done.output
    text = ok(plan(project, "--max-workers", "2"))
    assert "profile focus (control store override for all pipelines); every table" in text
    assert section(text, "skipped:") == [
        "  gold.daily_user_events: low is below the profile's skip_below (normal)"
    ]


def test_focus_skips_below_normal_and_balanced_skips_nothing(project):
    focus = ok(plan(project, "--profile", "focus", "--max-workers", "2"))
    balanced = ok(plan(project, "--profile", "balanced", "--max-workers", "2"))
    assert section(focus, "skipped:") == [
        "  gold.daily_user_events: low is below the profile's skip_below (normal)"
    ]
    assert "skipped: none" in balanced.splitlines()
    assert "done after 13 tick(s); the critical tables after 6" in focus.splitlines()
    assert "done after 13 tick(s); the critical tables after 7" in balanced.splitlines()
    order = [line.split()[2] for line in section(focus, "start order:")]
    assert "gold.daily_user_events" not in order
    assert len(order) == 24


def test_the_concurrency_table_shows_balanced_spreading_the_buckets(project):
    def row(text: str, system: str) -> list[str]:
        rows = section(text, "concurrency per system (steps at each tick):")
        return next(r.split() for r in rows if r.split()[0] == system)

    balanced = ok(plan(project, "--profile", "balanced", "--max-workers", "2"))
    focus = ok(plan(project, "--profile", "focus", "--max-workers", "2"))
    # system, limit, reserved, peak, then one count per tick
    assert row(balanced, "s3_raw")[:4] == ["s3_raw", "8", "1", "1"]
    assert row(focus, "s3_raw")[:4] == ["s3_raw", "8", "4", "2"]
    assert row(focus, "redshift")[:3] == ["redshift", "3", "2"]
    spark = row(balanced, "spark")
    assert all(int(n) <= 2 for n in spark[4:])  # never more than the workers


def test_waits_name_the_reserved_slots_under_focus(project):
    focus = ok(plan(project, "--profile", "focus", "--max-workers", "2"))
    waits = dict(
        line.strip().split(": ", 1) for line in section(focus, "waits (ready, not started):")
    )
    assert waits["bronze.products"] == (
        "spark: 4 of its 6 slots reserved for critical (2 running) (ticks 0-6)"
    )


def test_json_carries_the_same_schedule_as_the_planner(project):
    body = json.loads(
        ok(plan(project, "--pipeline", "fraud", "--max-workers", "3", "--format", "json"))
    )
    catalog = load_catalog(project)
    assert catalog.profiles is not None
    balanced = SchedulingPolicy.from_catalog(
        catalog, catalog.profiles.profiles["balanced"].settings
    )
    expected = simulate(balanced, catalog.pipeline_datasets("fraud"), 3)
    assert body["profile"] == {"name": "balanced", "source": "active"}
    assert body["tables"] == len(catalog.pipeline_datasets("fraud"))
    assert [s["table"] for s in body["schedule"]["starts"]] == list(expected.order)
    assert body["levels"] == catalog.lineage.levels()
    for system, seen in body["schedule"]["systems"].items():
        assert max(seen["per_tick"]) == seen["peak"] <= (seen["limit"] or seen["peak"]), system


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--profile", "rush"],
            "error: unknown profile 'rush': metadata/profiles.yaml defines balanced, focus\n",
        ),
        (
            ["--pipeline", "nightly"],
            "error: unknown pipeline 'nightly': metadata/pipelines.yaml "
            "defines analytics, core_daily, fraud, ingest\n",
        ),
    ],
)
def test_an_unknown_profile_or_pipeline_is_one_line_listing_the_defined_ones(
    project, args, message
):
    done = plan(project, *args)
    assert done.exit_code == 2
    assert done.stderr == message


def test_a_project_without_profiles_plans_levels_only(tmp_path):
    project = copy_demo_project(tmp_path / "theworldshop")
    (project / "metadata" / "profiles.yaml").unlink()
    text = ok(plan(project))
    assert text.splitlines()[-1] == "no metadata/profiles.yaml: no profile orders the run"
    named = plan(project, "--profile", "focus")
    assert named.exit_code == 2
    assert "no metadata/profiles.yaml: define the profiles there first" in named.stderr
