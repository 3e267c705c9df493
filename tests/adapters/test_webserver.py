"""The code location as the UI sees it: a real ``dagster-webserver`` loads ``workspace.yaml`` and
its GraphQL API shows every table of the catalog with the lineage engine's dependencies, the
repository's jobs, schedules and sensors, and materializes an asset it is asked to."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.translator import DatasetTranslator
from medallion_assets.catalog import Catalog
from medallion_assets.demo import DemoSettings, GeneratedFile, generate, write_files
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.lake import Lake
from tests.conftest import REPO
from tests.webserver import (
    LAUNCH,
    DagsterWebserver,
    running_webserver,
    server_env,
    write_instance,
)

pytestmark = pytest.mark.slow

LOCATION = "medallion_assets.definitions"
RUN_TIMEOUT = 300.0

ASSET_NODES = """
{ assetNodes { assetKey { path } groupName dependencyKeys { path }
               isMaterializable isExecutable kinds } }
"""

REPOSITORIES = """
{ repositoriesOrError { __typename
    ... on RepositoryConnection { nodes { name location { name }
        jobs { name } schedules { name cronSchedule pipelineName } sensors { name } } }
    ... on PythonError { message } } }
"""

RUN = """
query Run($id: ID!) { runOrError(runId: $id) { __typename
    ... on Run { status assetMaterializations { assetKey { path } metadataEntries { label
        ... on IntMetadataEntry { intValue } ... on TextMetadataEntry { text } } } } } }
"""

RUN_FAILURE = """
query Failure($id: ID!) { logsForRun(runId: $id) { ... on EventConnection { events {
    __typename ... on MessageEvent { message } } } } }
"""


def dotted(key: dict[str, list[str]]) -> str:
    return ".".join(key["path"])


@pytest.fixture(scope="module")
def demo_files(demo_catalog: Catalog) -> list[GeneratedFile]:
    return generate(demo_catalog, DemoSettings(rows=40, days=1))


@pytest.fixture(scope="module")
def medallion_home(tmp_path_factory: pytest.TempPathFactory, demo_files) -> Path:
    """A private MEDALLION_HOME holding one day of TheWorldShop's raw data in its local S3."""
    home = tmp_path_factory.mktemp("medallion_home")
    write_files(demo_files, LocalFolderObjectStore(home / "s3"))
    return home


@pytest.fixture(scope="module")
def webserver(
    tmp_path_factory: pytest.TempPathFactory, medallion_home: Path
) -> Iterator[DagsterWebserver]:
    home = write_instance(tmp_path_factory.mktemp("dagster_home"))
    with running_webserver(REPO / "workspace.yaml", home, server_env(medallion_home)) as server:
        yield server


@pytest.fixture(scope="module")
def asset_nodes(webserver: DagsterWebserver) -> dict[str, dict]:
    return {dotted(n["assetKey"]): n for n in webserver.graphql(ASSET_NODES)["assetNodes"]}


@pytest.fixture(scope="module")
def repository(webserver: DagsterWebserver) -> dict:
    answer = webserver.graphql(REPOSITORIES)["repositoriesOrError"]
    assert answer["__typename"] == "RepositoryConnection", answer
    (repository,) = answer["nodes"]
    assert repository["location"]["name"] == LOCATION
    return repository


@pytest.fixture(scope="module")
def defs(demo_catalog: Catalog) -> dg.Definitions:
    return definitions_for(demo_catalog, DatasetTranslator(demo_catalog))


def test_the_asset_graph_has_a_node_per_table_and_external_sources_and_exposures(
    asset_nodes, demo_catalog
):
    sources = {f"raw.{s}" for s in demo_catalog.sources}
    exposures = {f"exposure.{e}" for e in demo_catalog.exposures}
    assert set(asset_nodes) == set(demo_catalog.datasets) | sources | exposures
    materializable = {name for name, node in asset_nodes.items() if node["isMaterializable"]}
    assert materializable == set(demo_catalog.datasets)
    assert not any(asset_nodes[name]["isExecutable"] for name in sources | exposures)


def test_each_table_sits_in_its_layers_group_with_the_translators_kinds(asset_nodes, demo_catalog):
    # The server runs on the embedded defaults: loads go to DuckDB, whatever targets.yaml's
    # system says (the kinds name where the data is).
    translator = DatasetTranslator(demo_catalog, "duckdb")
    for name, dataset in demo_catalog.datasets.items():
        assert asset_nodes[name]["groupName"] == dataset.layer, name
        assert set(asset_nodes[name]["kinds"]) == translator.kinds(dataset), name
    assert {asset_nodes[f"raw.{s}"]["groupName"] for s in demo_catalog.sources} == {"raw"}
    assert {asset_nodes[f"exposure.{e}"]["groupName"] for e in demo_catalog.exposures} == {
        "exposures"
    }
    assert {"spark", "iceberg", "duckdb"} <= set(asset_nodes["gold.revenue_by_region"]["kinds"])


def test_the_graphs_dependencies_equal_the_lineage_engines_edges(asset_nodes, demo_catalog):
    shown = {
        (dotted(parent), name)
        for name, node in asset_nodes.items()
        for parent in node["dependencyKeys"]
    }
    # Lineage edges, plus the tables checks read (built first; marked in the dep's metadata).
    checks = {(t, n) for n, d in demo_catalog.datasets.items() for t in d.check_dependencies}
    assert shown == set(demo_catalog.lineage.dag.edges()) | checks


def test_the_repository_shows_the_jobs_schedules_and_sensors_of_the_definitions(repository, defs):
    jobs = {job["name"] for job in repository["jobs"]}
    assert jobs - {"__ASSET_JOB"} == {job.name for job in defs.resolve_all_job_defs()} - {
        "__ASSET_JOB"
    }
    schedules = {s["name"]: (s["cronSchedule"], s["pipelineName"]) for s in repository["schedules"]}
    assert schedules == {
        s.name: (s.cron_schedule, s.job_name) for s in defs.get_repository_def().schedule_defs
    }
    assert {s["name"] for s in repository["sensors"]} == {s.name for s in defs.sensors}


def test_a_run_launched_through_graphql_materializes_the_asset_into_the_lake(
    webserver, repository, medallion_home, demo_files
):
    params = {
        "selector": {
            "repositoryLocationName": LOCATION,
            "repositoryName": repository["name"],
            "jobName": "__ASSET_JOB",
            "assetSelection": [{"path": ["bronze", "fx_rates"]}],
        },
        "mode": "default",
        "runConfigData": {},
    }
    launched = webserver.graphql(LAUNCH, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]
    run = wait_for_run(webserver, run_id)
    assert run["status"] == "SUCCESS", failure_messages(webserver, run_id)

    (materialization,) = run["assetMaterializations"]
    assert dotted(materialization["assetKey"]) == "bronze.fx_rates"
    metadata = {
        e["label"]: e.get("intValue", e.get("text")) for e in materialization["metadataEntries"]
    }
    current = Lake.local(medallion_home / "lake").current("bronze.fx_rates")
    assert current is not None and current.run_id == run_id
    assert metadata["lake_version"] == current.version_id
    expected_rows = sum(f.rows for f in demo_files if f.source == "fx_rates")
    assert metadata["rows"] == current.rows == expected_rows > 0


def wait_for_run(webserver: DagsterWebserver, run_id: str) -> dict:
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        run = webserver.graphql(RUN, {"id": run_id})["runOrError"]
        if run.get("status") in ("SUCCESS", "FAILURE", "CANCELED"):
            return run
        time.sleep(1)
    raise TimeoutError(f"run {run_id} not finished after {RUN_TIMEOUT:.0f} s")


def failure_messages(webserver: DagsterWebserver, run_id: str) -> str:
    events = webserver.graphql(RUN_FAILURE, {"id": run_id})["logsForRun"].get("events", [])
    return "\n".join(e.get("message", "") for e in events if "Failure" in e["__typename"])[-4000:]
