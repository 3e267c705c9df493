"""The MedallionProject component: a dg project's ``defs.yaml`` naming a project folder loads
its tables, checks, jobs and sensors (``dg list defs``, ``dg check defs``), and the package's
own code location is that component."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.kill_switch import CONTROL_SENSOR
from medallion_assets.adapters.relaunch import RELAUNCH_SENSOR
from medallion_assets.catalog import CatalogError
from medallion_assets.testing import read_table

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


def two_projects(tmp_path: Path, second_home: str | None = "../../../state/eu") -> Path:
    """A dg project whose code location holds the minimal project twice, prefixed ``sales``
    and ``eu``, each with raw orders of its own; returns its package."""
    root, package = dg_project(tmp_path)
    (package / "defs" / "sales" / "defs.yaml").write_text(
        "type: medallion_assets.adapters.component.MedallionProject\n"
        "attributes:\n  project: ../../../sales\n  prefix: sales\n"
        "  home: ../../../state/sales\n"
    )
    shutil.copytree(MINIMAL, root / "eu")
    (package / "defs" / "eu").mkdir()
    home = f"\n  home: {second_home}" if second_home else ""
    (package / "defs" / "eu" / "defs.yaml").write_text(
        "type: medallion_assets.adapters.component.MedallionProject\n"
        f"attributes:\n  project: ../../../eu\n  prefix: eu{home}\n"
    )
    for name, amount in (("sales", 5), ("eu", 7)):
        raw = root / "state" / name / "s3" / "minimal-raw" / "orders"
        raw.mkdir(parents=True)
        (raw / "a.jsonl").write_text(
            json.dumps({"order_id": 1, "amount": amount, "country": "de"}) + "\n"
        )
    return package


def _clean_settings(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for name in os.environ:
        if name.startswith("MEDALLION_") and name != "MEDALLION_SPARK_JARS":
            monkeypatch.delenv(name)


def test_one_code_location_holds_two_projects_each_under_its_prefix(tmp_path, monkeypatch):
    package = two_projects(tmp_path)
    monkeypatch.syspath_prepend(str(package.parent))
    _clean_settings(monkeypatch)
    defs = dg.load_from_defs_folder(path_within_project=package)
    graph = defs.resolve_asset_graph()
    keys = {"/".join(k.path) for k in graph.get_all_asset_keys()}
    for prefix in ("sales", "eu"):
        assert {f"{prefix}/bronze/orders", f"{prefix}/gold/revenue"} <= keys
        assert f"{prefix}/raw/orders" in keys
    assert not any(k.startswith(("bronze/", "gold/")) for k in keys)
    jobs = {job.name for job in defs.resolve_all_job_defs()}
    assert {"sales__daily", "eu__daily", "sales__medallion_control"} <= jobs
    assert "eu__medallion_relaunch" in jobs
    sensors = {s.name for s in defs.sensors or []}
    for prefix in ("sales", "eu"):
        assert {f"{prefix}__{s}" for s in (CONTROL_SENSOR, RELAUNCH_SENSOR)} <= sensors
    assert {"sales__audit_run_succeeded", "eu__audit_run_succeeded"} <= sensors
    assert {"sales_spark", "eu_spark", "sales_control", "eu_lake"} <= set(defs.resources or {})
    # each project's step uses its own resources
    spec = graph.get(dg.AssetKey(["eu", "gold", "revenue"]))
    assert spec.group_name == "eu_gold"
    assert dg.AssetKey(["eu", "silver", "orders_clean"]) in spec.parent_keys


def test_two_projects_that_would_share_a_lake_are_refused_in_one_line(tmp_path, monkeypatch):
    package = two_projects(tmp_path, second_home="../../../state/sales")
    monkeypatch.syspath_prepend(str(package.parent))
    _clean_settings(monkeypatch)
    with pytest.raises(Exception) as raised:
        dg.load_from_defs_folder(path_within_project=package)
    error = raised.value
    while error is not None and "would share" not in str(error):
        error = error.__cause__
    assert error is not None, raised.value
    said = str(error)
    assert (
        "'sales'" in said
        and "'eu'" in said
        and "would share the lake" in said
        and "give each its own `home:`" in said
    )
    assert "\n" not in said


def test_a_prefix_that_cannot_name_things_is_refused_naming_the_file(tmp_path, monkeypatch):
    root, package = dg_project(tmp_path)
    (package / "defs" / "sales" / "defs.yaml").write_text(
        "type: medallion_assets.adapters.component.MedallionProject\n"
        "attributes:\n  project: ../../../sales\n  prefix: Sales-EU\n"
    )
    monkeypatch.syspath_prepend(str(root))
    with pytest.raises(Exception) as raised:
        dg.load_from_defs_folder(path_within_project=package)
    error = raised.value
    while error is not None and "prefix" not in str(error):
        error = error.__cause__
    assert error is not None, raised.value
    assert "defs.yaml: prefix 'Sales-EU': expected lower-case letters" in str(error)


@pytest.mark.slow
def test_each_project_of_a_shared_code_location_runs_into_its_own_lake(
    tmp_path, monkeypatch, spark
):
    package = two_projects(tmp_path)
    monkeypatch.syspath_prepend(str(package.parent))
    _clean_settings(monkeypatch)
    defs = dg.load_from_defs_folder(path_within_project=package)
    instance = dg.DagsterInstance.ephemeral()
    for prefix in ("sales", "eu"):
        result = defs.resolve_job_def(f"{prefix}__daily").execute_in_process(instance=instance)
        assert result.success
        done = {"/".join(e.asset_key.path) for e in result.get_asset_materialization_events()}
        assert done == {f"{prefix}/{t}" for t in ("bronze/orders", "silver/orders_clean")} | {
            f"{prefix}/gold/revenue"
        }
    state = package.parent / "state"
    for prefix, amount in (("sales", 5), ("eu", 7)):
        revenue = read_table("gold.revenue", lake_root=state / prefix / "lake", spark=spark)
        assert [float(r) for r in revenue["revenue"]] == [amount], prefix
    # the run audit of each project went to its own control store
    for prefix in ("sales", "eu"):
        assert (state / prefix / "control.db").exists()


@pytest.mark.slow
def test_dg_checks_and_lists_a_code_location_of_two_projects(tmp_path):
    package = two_projects(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDALLION_", "DAGSTER_"))}
    env["VIRTUAL_ENV"] = str(Path(sys.executable).parents[1])
    run = functools.partial(
        subprocess.run, cwd=package.parent, env=env, capture_output=True, text=True, timeout=300
    )
    checked = run([DG, "check", "defs"])
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    listed = run([DG, "list", "defs", "--json"])
    assert listed.returncode == 0, listed.stderr[-3000:]
    found = json.loads(listed.stdout)
    assert {"sales/gold/revenue", "eu/gold/revenue"} <= {a["asset_key"] for a in found["assets"]}
    assert {s["name"] for s in found["schedules"]} == {
        "sales__daily_schedule",
        "eu__daily_schedule",
    }
