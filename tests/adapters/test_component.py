"""The MedallionProject component: a dg project's ``defs.yaml`` naming a project folder loads
its tables, checks, jobs and sensors (``dg list defs``, ``dg check defs``), and the package's
own code location is that component."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.catalog import CatalogError

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"
REPO = Path(__file__).parents[2]
DG = str(Path(sys.executable).parent / "dg")

DEFINITIONS = """from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
"""


def dg_project(tmp_path: Path, project: str = "../../../sales") -> tuple[Path, Path]:
    """(root, package) of a user's dg project whose defs/sales/defs.yaml names ``project``;
    the package's name is the test's own (Python caches a module by its name)."""
    root = tmp_path / "shop"
    shutil.copytree(MINIMAL, root / "sales")
    name = "shop_" + "".join(c for c in tmp_path.name if c.isalnum())
    package = root / name
    (package / "defs" / "sales").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    (package / "definitions.py").write_text(DEFINITIONS)
    (package / "defs" / "sales" / "defs.yaml").write_text(
        "type: medallion_assets.adapters.component.MedallionProject\n"
        f"attributes:\n  project: {project}\n"
    )
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1.0"\n\n'
        '[tool.dg]\ndirectory_type = "project"\n\n'
        f'[tool.dg.project]\nroot_module = "{name}"\ndefs_module = "{name}.defs"\n'
    )
    return root, package


def test_a_defs_yaml_naming_a_project_loads_its_tables_checks_and_jobs(tmp_path, monkeypatch):
    root, package = dg_project(tmp_path)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("MEDALLION_HOME", str(tmp_path / "home"))
    defs = dg.load_from_defs_folder(path_within_project=package)
    graph = defs.resolve_asset_graph()
    tables = {"/".join(k.path) for k in graph.get_all_asset_keys() if k.path[0] != "raw"}
    assert tables == {"bronze/orders", "silver/orders_clean", "gold/revenue"}
    checks = {c.name for c in graph.asset_check_keys}
    assert "accepted_values_country" in checks
    assert defs.resolve_job_def("daily") is not None  # the minimal project's pipeline


def test_a_defs_yaml_naming_a_folder_that_is_not_a_project_says_what_is_missing(
    tmp_path, monkeypatch
):
    root, package = dg_project(tmp_path, project="../../../nowhere")
    monkeypatch.syspath_prepend(str(root))
    with pytest.raises(Exception) as raised:
        dg.load_from_defs_folder(path_within_project=package)
    error = raised.value
    while error is not None and not isinstance(error, CatalogError):
        error = error.__cause__
    assert isinstance(error, CatalogError), raised.value
    assert "the metadata folder is missing" in str(error)


@pytest.mark.slow
def test_dg_lists_and_checks_the_packages_own_code_location():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDALLION_", "DAGSTER_"))}
    env["VIRTUAL_ENV"] = str(Path(sys.executable).parents[1])
    checked = subprocess.run(
        [DG, "check", "defs"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr
    listed = subprocess.run(
        [DG, "list", "defs", "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert listed.returncode == 0, listed.stderr[-3000:]
    found = json.loads(listed.stdout)
    assert "gold/revenue_by_region" in {a["asset_key"] for a in found["assets"]}
    assert len(found["schedules"]) >= 1 and len(found["sensors"]) >= 1
