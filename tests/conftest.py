"""Shared fixtures: TheWorldShop (the repo's own sql/ and metadata/) is every test's project."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.control.state import RuntimeState

pytest_plugins = ["tests.s3_server", "tests.spark_session", "tests.postgres_server"]

REPO = Path(__file__).resolve().parents[1]
# The TPC-H / TPC-DS queries the lineage tests read live in the repository (see its README).
CORPORA = REPO / "tests" / "data" / "corpora"


def fixture_path(path: Path) -> Path:
    """``path`` if it exists; else fail with its name, not with an empty scan's ``KeyError``."""
    if not path.exists():
        raise FileNotFoundError(
            f"test fixture {path} is missing: the tests read only files inside the repository; "
            "restore it from git (git checkout -- tests/data)"
        )
    return path


def copy_demo_project(destination: Path) -> Path:
    """A private copy of TheWorldShop that a test may edit or break."""
    destination.mkdir(parents=True, exist_ok=True)
    for folder in ("sql", "metadata"):
        shutil.copytree(REPO / folder, destination / folder)
    return destination


@pytest.fixture
def demo_project(tmp_path: Path) -> Path:
    return copy_demo_project(tmp_path / "theworldshop")


@pytest.fixture(scope="session")
def demo_catalog() -> Catalog:
    """The loaded demo catalog (read-only; loaded once per test run, without the cache)."""
    return load_catalog(REPO, use_cache=False)


@pytest.fixture
def control_state(tmp_path: Path) -> RuntimeState:
    """The runtime state of a fresh control store (a SQLite file, the embedded default)."""
    from medallion_assets.control.store import ControlStore

    return ControlStore.open(f"sqlite:///{tmp_path / 'control.db'}").state


# The longest test files, longest first (each file's summed `--durations` of the CI run of
# f345f78: whole pipelines on a cluster, through Spark Connect, under Prefect, stopped, killed
# and resumed; the incremental and scd2 property tests), start first. Not the OpenLineage
# demo run: beside the heaviest files its listener falls behind Spark more often (see there).
# The two xdist workers then share them from the start, instead of one worker running a
# three-minute file alone at the end (pyproject's `--no-loadscope-reorder`: xdist would
# otherwise send the files with the most tests first, whatever this order says).
LONGEST_FIRST = (
    "tests/runtime/test_incremental_build.py",
    "tests/e2e/test_pipeline.py",
    "tests/adapters/test_faults.py",
    "tests/adapters/test_run_queue.py",
    "tests/e2e/test_stopping.py",
    "tests/e2e/test_standalone_cluster.py",
    "tests/e2e/test_spark_connect_demo.py",
    "tests/adapters/test_run_recovery.py",
    "tests/runtime/test_scd2_build.py",
    "tests/test_s3_recipe.py",
    "tests/adapters/test_exports.py",
    "tests/runtime/test_ingest_bad_input.py",
    "tests/adapters/test_backfill.py",
    "tests/adapters/test_runs.py",
    "tests/e2e/",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        starts = [i for i, prefix in enumerate(LONGEST_FIRST) if item.nodeid.startswith(prefix)]
        return starts[0] if starts else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: within a file, the file's own order
