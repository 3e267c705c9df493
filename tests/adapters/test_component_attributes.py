"""The MedallionProject component's extension points, as a Dagster user sets them in a
defs.yaml: ``translation`` (asset attributes from templates), ``op`` (each step's settings),
``select``/``exclude``, Dagster's own ``post_processing``, a templated ``prefix``, a Python
subclass's ``table_runner``; ``dg scaffold defs`` writing a working project; and the package's
code location being its defs folder (a changed defs.yaml is what loads)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from tests.adapters.test_component import DEFINITIONS, DG, MINIMAL, dg_project

REPO = Path(__file__).parents[2]


def with_attributes(package: Path, attributes: str, tail: str = "") -> None:
    (package / "defs" / "sales" / "defs.yaml").write_text(
        "type: medallion_assets.MedallionProject\n"
        f"attributes:\n  project: ../../../sales\n{attributes}{tail}"
    )


def loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, attributes: str, tail: str = ""):
    root, package = dg_project(tmp_path)
    with_attributes(package, attributes, tail)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("MEDALLION_HOME", str(tmp_path / "home"))
    return dg.load_from_defs_folder(path_within_project=package)


def first_error(raised: pytest.ExceptionInfo[BaseException], says: str) -> str:
    """The message in ``raised``'s chain that says ``says`` (Dagster wraps a component's)."""
    error: BaseException | None = raised.value
    while error is not None and says not in str(error):
        error = error.__cause__ or error.__context__
    assert error is not None, raised.value
    return str(error)


def test_translation_op_and_post_processing_reach_every_table(tmp_path, monkeypatch):
    monkeypatch.setenv("TEAM", "acme")
    defs = loaded(
        tmp_path,
        monkeypatch,
        '  prefix: "{{ env.TEAM }}"\n'
        "  translation:\n"
        '    group_name: "sales_{{ layer }}"\n'
        '    owners: ["team:{{ dataset.system }}"]\n'
        '    tags: {domain: "{{ table }}"}\n'
        "    kinds: [medallion]\n"
        "  op:\n"
        "    tags: {team: sales}\n"
        "    pool: sales_pool\n",
        "post_processing:\n  assets:\n    - target: '*'\n"
        "      attributes: {metadata: {note: post-processed}}\n",
    )
    graph = defs.resolve_asset_graph()
    key = dg.AssetKey(["acme", "silver", "orders_clean"])  # the prefix from a template
    spec = graph.get(key)
    assert spec.group_name == "sales_silver"
    assert spec.owners == ["team:spark"]
    assert spec.tags["domain"] == "silver.orders_clean"
    assert spec.tags["layer"] == "silver"  # the project's own tags stay
    assert spec.kinds == {"medallion"}
    assert spec.metadata["note"] == "post-processed"
    assert "sql" in spec.metadata  # merged, not replaced
    # the deps still come from the SQL
    assert dg.AssetKey(["acme", "bronze", "orders"]) in spec.parent_keys
    node = defs.get_assets_def(key).node_def
    assert node.tags["team"] == "sales"
    assert node.pool == "sales_pool"


def test_select_and_exclude_leave_the_other_tables_in_the_graph_but_not_in_any_job(
    tmp_path, monkeypatch
):
    defs = loaded(tmp_path, monkeypatch, "  select: layer:silver,layer:gold\n")
    graph = defs.resolve_asset_graph()
    bronze = dg.AssetKey(["bronze", "orders"])
    assert graph.get(bronze).is_executable is False  # its lineage still shows
    assert graph.get(dg.AssetKey(["silver", "orders_clean"])).is_executable
    daily = defs.resolve_job_def("daily")
    assert bronze not in daily.asset_layer.selected_asset_keys
    assert dg.AssetKey(["gold", "revenue"]) in daily.asset_layer.selected_asset_keys
    assert not any("new_objects" in s.name for s in defs.sensors or [])  # bronze's sensor

    defs = loaded(tmp_path / "2", monkeypatch, "  exclude: gold.*\n")
    graph = defs.resolve_asset_graph()
    assert not graph.get(dg.AssetKey(["gold", "revenue"])).is_executable
    assert graph.get(bronze).is_executable


@pytest.mark.parametrize(
    ("attributes", "says"),
    [
        ("  select: gold.revnue\n", "defs.yaml: select/exclude 'gold.revnue' matches no table"),
        ("  op:\n    name: one_op\n", "op.name 'one_op': each table's op is named by its table"),
        (
            "  translation:\n    key_prefix: other\n",
            "translation of bronze.orders changes its asset key",
        ),
    ],
)
def test_settings_the_component_cannot_honour_are_refused_in_one_line(
    tmp_path, monkeypatch, attributes, says
):
    with pytest.raises(Exception) as raised:
        loaded(tmp_path, monkeypatch, attributes)
    said = first_error(raised, says)
    assert "\n" not in said


def test_a_component_without_a_project_says_where_to_set_one(tmp_path, monkeypatch):
    root, package = dg_project(tmp_path)
    (package / "defs" / "sales" / "defs.yaml").write_text(
        "type: medallion_assets.MedallionProject\n"
    )
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delenv("MEDALLION_PROJECT", raising=False)
    with pytest.raises(Exception) as raised:
        dg.load_from_defs_folder(path_within_project=package)
    said = first_error(raised, "no project")
    assert "defs.yaml: no project: set `attributes: project:`" in said


def test_the_packages_code_location_is_its_defs_folder(monkeypatch, tmp_path):
    """``definitions.py`` loads ``defs/``: the demo's defs.yaml takes $MEDALLION_PROJECT."""
    import medallion_assets.definitions as location

    monkeypatch.setenv("MEDALLION_PROJECT", str(MINIMAL))
    monkeypatch.setenv("MEDALLION_HOME", str(tmp_path / "home"))
    defs = location.defs()
    keys = {"/".join(k.path) for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"bronze/orders", "silver/orders_clean", "gold/revenue"} <= keys
    assert "gold/revenue_by_region" not in keys  # not the demo
    monkeypatch.setenv("MEDALLION_PROJECT", "")  # empty counts as unset: the demo
    keys = {"/".join(k.path) for k in location.defs().resolve_asset_graph().get_all_asset_keys()}
    assert "gold/revenue_by_region" in keys


RUNNER = """
from medallion_assets import MedallionProject
from medallion_assets.runtime.table_runner import TableRunner


class Marked(TableRunner):
    def run(self, table_run):
        return super().run(table_run).with_metadata(runner="marked")


class MarkedProject(MedallionProject):
    def table_runner(self):
        return Marked()
"""


@pytest.mark.slow
def test_a_subclass_runs_every_table_through_its_own_runner(tmp_path, monkeypatch, spark):
    root, package = dg_project(tmp_path)
    (package / "marked.py").write_text(RUNNER)
    (package / "defs" / "sales" / "defs.yaml").write_text(
        f"type: {package.name}.marked.MarkedProject\nattributes:\n  project: ../../../sales\n"
    )
    raw = tmp_path / "home" / "s3" / "minimal-raw" / "orders"
    raw.mkdir(parents=True)
    (raw / "a.jsonl").write_text(json.dumps({"order_id": 1, "amount": 5, "country": "de"}) + "\n")
    monkeypatch.syspath_prepend(str(root))
    for name in list(os.environ):
        if name.startswith("MEDALLION_") and name != "MEDALLION_SPARK_JARS":
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEDALLION_HOME", str(tmp_path / "home"))
    defs = dg.load_from_defs_folder(path_within_project=package)
    result = defs.resolve_job_def("daily").execute_in_process(
        instance=dg.DagsterInstance.ephemeral()
    )
    assert result.success
    events = result.get_asset_materialization_events()
    assert len(events) == 3
    for event in events:
        metadata = event.materialization.metadata
        assert metadata["runner"].value == "marked", event.asset_key


@pytest.mark.slow
def test_dg_scaffolds_a_project_that_lists_checks_and_follows_its_defs_yaml(tmp_path):
    root = tmp_path / "shopco"
    package = root / "shopco"
    (package / "defs").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    (package / "definitions.py").write_text(DEFINITIONS)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "shopco"\nversion = "0.1.0"\n\n[tool.dg]\ndirectory_type = "project"'
        '\n\n[tool.dg.project]\nroot_module = "shopco"\ndefs_module = "shopco.defs"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEDALLION_", "DAGSTER_"))}
    env |= {"VIRTUAL_ENV": str(Path(sys.executable).parents[1]), "PYTHONPATH": str(root)}
    run = functools.partial(
        subprocess.run, cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    made = run([DG, "scaffold", "defs", "medallion_assets.MedallionProject", "orders_lake"])
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    assert (root / "orders_lake" / "metadata" / "datasets.yaml").exists()
    assert (root / "orders_lake" / "sql" / "gold" / "daily_revenue.sql").exists()
    checked = run([DG, "check", "defs"])
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]

    def listed() -> dict[str, dict[str, object]]:
        done = run([DG, "list", "defs", "--json"])
        assert done.returncode == 0, done.stderr[-3000:]
        return {a["asset_key"]: a for a in json.loads(done.stdout)["assets"]}

    assets = listed()
    assert {"bronze/orders", "silver/orders_clean", "gold/daily_revenue"} <= set(assets)
    defs_yaml = package / "defs" / "orders_lake" / "defs.yaml"
    defs_yaml.write_text(
        defs_yaml.read_text().rstrip()
        + "\n  prefix: probe\n  exclude: layer:bronze\n"
        + '  translation:\n    group_name: "orders_{{ layer }}"\n'
    )
    assets = listed()
    assert "bronze/orders" not in assets
    assert assets["probe/silver/orders_clean"]["group_name"] == "orders_silver"
    assert assets["probe/bronze/orders"]["is_executable"] is False
    defs_yaml.write_text(
        "type: medallion_assets.MedallionProject\nattributes:\n  project: ../../../nowhere\n"
    )
    failed = run([DG, "list", "defs", "--json"])
    assert failed.returncode != 0
    assert "the metadata folder is missing" in failed.stdout + failed.stderr
