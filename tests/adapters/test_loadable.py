"""`catalog validate` green means the project loads in Dagster.

The demo loads; each broken project of ``tests/catalog/test_broken_projects.py`` is refused by
`medallion catalog validate` and by `medallion run` (exit 2, the catalog's errors, no
traceback); and of many generated small projects, mixing names, schedules, owners, tags and
partition patterns Dagster accepts with ones it refuses, every one the catalog accepts loads.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner

from medallion_assets.adapters.code_location import build_definitions
from medallion_assets.adapters.kill_switch import CONTROL_JOB
from medallion_assets.adapters.relaunch import RELAUNCH_JOB
from medallion_assets.catalog import CatalogError, load_catalog
from medallion_assets.catalog.names import CODE_LOCATION_JOBS, DAGSTER_RESERVED
from medallion_assets.cli import cli
from tests.catalog.test_broken_projects import CASES, MINIMAL, build
from tests.catalog.test_cron import generated as generated_schedules
from tests.conftest import REPO


def test_the_demo_project_loads_in_dagster():
    dg.Definitions.validate_loadable(build_definitions(REPO))


def test_the_catalogs_reserved_names_are_the_ones_dagster_and_the_code_location_use():
    from dagster._core.definitions.utils import DISALLOWED_NAMES

    assert set(DISALLOWED_NAMES) <= DAGSTER_RESERVED
    assert {CONTROL_JOB, RELAUNCH_JOB} == set(CODE_LOCATION_JOBS)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_catalog_validate_refuses_each_broken_project(tmp_path: Path, kind: str):
    root = build(tmp_path, CASES[kind])
    result = CliRunner().invoke(cli, ["catalog", "validate", "--project", str(root)])
    assert result.exit_code == 2, result.output
    for file, _, text in CASES[kind].expected:
        assert any(file in line and text in line for line in result.stderr.splitlines()), (
            result.stderr
        )


@pytest.mark.parametrize(
    "kind",
    [
        "partition_pattern_leaves_the_prefix",
        "cron_minute_out_of_range",
        "target_name_dagster_refuses",
        "silver_reads_gold",
        "quoted_number",
        "sql_nested_past_the_recursion_limit",
    ],
)
def test_medallion_run_exits_2_with_the_catalogs_errors(tmp_path: Path, monkeypatch, kind: str):
    monkeypatch.setenv("MEDALLION_HOME", str(tmp_path / "home"))
    root = build(tmp_path, CASES[kind])
    result = CliRunner().invoke(cli, ["run", "--project", str(root)])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert f"error: the project at {root} does not load:" in result.stderr
    file, _, text = CASES[kind].expected[0]
    assert any(file in line and text in line for line in result.stderr.splitlines())


# --- generated projects -------------------------------------------------------------------

# Each knob edits the minimal project with a value drawn from a pool mixing what Dagster
# accepts with what it refuses; a project gets several knobs at once.
_NAMES = ["orders2", "o'dd", "o-dd", "select", "class", "_x", "x" * 127, "x" * 128, "t9"]
_COLUMNS = ["x", "my col", "order_id", "X", "a_b", "typ"]
_OWNERS = ["team:data", "bob", "a@b.co", "team:", "x@y", "ops@example.org"]
_TAGS = ["finance", "month end", "a.b-c", "t" * 59, "t" * 60, "ü"]
_PIPELINES = ["daily", "input", "layer_gold", "x__daily", "class", "p_1", "medallion_relaunch"]
_PATTERNS = ["dt={date}", "../dt={date}", "{date}", "a/{date}/b", "dt={date}/", "d t={date}"]
_SYSTEMS = ["spark", "s" * 63, "s" * 64]


def _write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _table(rng: random.Random, root: Path) -> None:
    name, column = rng.choice(_NAMES), rng.choice(_COLUMNS)
    layer = rng.choice(["silver", "gold"])
    read = rng.choice(["bronze.orders", "silver.orders_clean", "gold.revenue"])
    _write(
        root,
        f"sql/{layer}/extra.sql",
        f"CREATE TABLE {layer}.`{name}` AS SELECT order_id AS `{column}` FROM {read}\n",
    )
    if rng.random() < 0.5:
        _write(
            root,
            "metadata/datasets.yaml",
            f"datasets:\n  {layer}.{name}:\n    rules:\n      - {{kind: not_null, columns: "
            f"['{column}']}}\n",
        )


def _pipeline(rng: random.Random, root: Path) -> None:
    schedule = rng.choice(generated_schedules(200, seed=rng.randrange(1000)))
    _write(
        root,
        "metadata/pipelines.yaml",
        f"pipelines:\n  - id: {rng.choice(_PIPELINES)}\n    schedule: '{schedule}'\n"
        f"    owners: ['{rng.choice(_OWNERS)}']\n    select: {{sinks: [gold.revenue]}}\n",
    )


def _settings(rng: random.Random, root: Path) -> None:
    _write(
        root,
        "metadata/datasets.yaml",
        f"datasets:\n  silver.orders_clean:\n    owners: ['{rng.choice(_OWNERS)}']\n"
        f"    tags: ['{rng.choice(_TAGS)}']\n",
    )


def _partition(rng: random.Random, root: Path) -> None:
    sources = (MINIMAL / "metadata/sources.yaml").read_text()
    pattern = rng.choice(_PATTERNS)
    _write(
        root,
        "metadata/sources.yaml",
        sources.replace("format: jsonl", f"format: jsonl\n    partition: '{pattern}'"),
    )
    _write(
        root,
        "metadata/datasets.yaml",
        "datasets:\n  bronze.orders:\n    partitions: {column: _ingested_at, start: 2026-01-01}\n",
    )


def _system(rng: random.Random, root: Path) -> None:
    name = rng.choice(_SYSTEMS)
    systems = (MINIMAL / "metadata/systems.yaml").read_text()
    _write(root, "metadata/systems.yaml", systems.replace("spark:", f"{name}:"))
    _write(root, "metadata/project.yaml", f"name: minimal\ncompute_system: {name}\n")


KNOBS: list[Callable[[random.Random, Path], None]] = [
    _table,
    _pipeline,
    _settings,
    _partition,
    _system,
]


def generated_projects(tmp_path: Path, count: int, seed: int = 7) -> list[Path]:
    rng = random.Random(seed)
    roots = []
    for i in range(count):
        root = tmp_path / f"p{i}"
        shutil.copytree(MINIMAL, root)
        for knob in rng.sample(KNOBS, k=rng.randint(1, 3)):
            knob(rng, root)
        roots.append(root)
    return roots


def test_every_generated_project_the_catalog_accepts_loads_in_dagster(tmp_path: Path):
    accepted = refused = 0
    for root in generated_projects(tmp_path, 80):
        try:
            load_catalog(root, use_cache=False)
        except CatalogError:
            refused += 1
            continue
        accepted += 1
        try:
            dg.Definitions.validate_loadable(build_definitions(root))
        except Exception as error:  # any refusal by Dagster is the failure this test looks for
            files = {p.relative_to(root): p.read_text()[:300] for p in root.rglob("*.y*ml")}
            pytest.fail(f"{root} validated but does not load: {error}\n{files}")
    # Both outcomes occur, so the property is exercised on each side.
    assert accepted >= 15 and refused >= 15, (accepted, refused)
