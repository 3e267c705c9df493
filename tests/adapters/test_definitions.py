"""The code location: one asset per table built from the catalog, with exactly the lineage
engine's dependencies, and jobs, schedules and sensors from metadata. Nothing here runs Spark."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import build_definitions, definitions_for
from medallion_assets.adapters.translator import CHECK_DEP, DatasetTranslator
from tests.conftest import REPO


@pytest.fixture(scope="module")
def defs(demo_catalog) -> dg.Definitions:
    return definitions_for(demo_catalog, DatasetTranslator(demo_catalog))


@pytest.fixture(scope="module")
def graph(defs):
    return defs.resolve_asset_graph()


def key(table: str) -> dg.AssetKey:
    return dg.AssetKey(table.split(".", 1))


def test_one_materializable_asset_per_table_and_external_sources_and_exposures(
    defs, graph, demo_catalog
):
    materializable = {k.to_user_string() for k in graph.materializable_asset_keys}
    assert materializable == {n.replace(".", "/") for n in demo_catalog.datasets}
    external = {k.to_user_string() for k in graph.external_asset_keys}
    assert external == {f"raw/{s}" for s in demo_catalog.sources} | {
        f"exposure/{e}" for e in demo_catalog.exposures
    }


def test_asset_deps_equal_the_lineage_engines_edges_one_by_one(graph, demo_catalog):
    asset_edges = {
        (".".join(parent.path), ".".join(node.key.path))
        for node in graph.asset_nodes
        for parent in node.parent_keys
    }
    lineage_edges = set(demo_catalog.lineage.dag.edges())
    check_edges = {
        (table, name) for name, d in demo_catalog.datasets.items() for table in d.check_dependencies
    }
    assert check_edges  # the demo's referential-integrity checks read other tables
    assert asset_edges == lineage_edges | check_edges


def test_check_dependencies_are_marked_apart_from_lineage(defs, demo_catalog):
    """Dagster runs the tables a check reads first; those extra edges say so in metadata."""
    marked = set()
    for assets_def in defs.assets:
        for spec in getattr(assets_def, "specs", ()):
            for dep in spec.deps:
                edge = (".".join(dep.asset_key.path), ".".join(spec.key.path))
                if dep.metadata.get(CHECK_DEP) == "check":
                    marked.add(edge)
                else:
                    assert edge in set(demo_catalog.lineage.dag.edges())
    assert ("silver.orders_usd", "silver.order_items") in marked
    assert marked == {
        (t, n)
        for n, d in demo_catalog.datasets.items()
        for t in d.check_dependencies
        if t not in d.upstream
    }


def test_every_rule_is_an_asset_check_blocking_when_severity_is_error(graph, demo_catalog):
    expected = {
        (name, rule.label(), rule.blocking)
        for name, d in demo_catalog.datasets.items()
        for rule in d.rules
    }
    found = set()
    for check_key in graph.asset_check_keys:
        spec = graph.get_check_spec(check_key)
        found.add((".".join(check_key.asset_key.path), check_key.name, spec.blocking))
        assert spec.description
    assert found == expected
    assert ("silver.addresses_validated", "iso_country_code", True) in found


def test_spec_carries_kinds_owners_tags_code_version_and_column_lineage(graph, demo_catalog):
    dataset = demo_catalog.datasets["gold.revenue_by_region"]
    node = graph.get(key("gold.revenue_by_region"))
    assert node.group_name == "gold"
    assert {"spark", "redshift"} <= set(node.kinds)
    assert node.owners == list(dataset.owners)
    assert node.tags["layer"] == "gold" and node.tags["criticality"] == "critical"
    assert node.code_version == dataset.code_version
    assert "sql" in node.metadata
    schema = node.metadata["dagster/column_schema"]
    assert [c.name for c in schema.columns] == list(dataset.column_names)
    lineage = node.metadata["dagster/column_lineage"]
    for column in dataset.columns:
        deps = {
            f"{'.'.join(d.asset_key.path)}.{d.column_name}"
            for d in lineage.deps_by_column[column.column]
        }
        assert deps == set(column.sources)


@pytest.mark.parametrize(
    ("url", "kind"),
    [(None, "duckdb"), ("postgresql://u:p@localhost/db", "postgres")],
)
def test_a_loaded_table_is_of_the_kind_of_the_warehouse_in_force(
    demo_project, monkeypatch, url, kind
):
    """The demo's targets say redshift; on the embedded defaults loads go to DuckDB."""
    from medallion_assets.adapters.code_location import build_definitions

    if url is None:
        monkeypatch.delenv("MEDALLION_WAREHOUSE_URL", raising=False)
    else:
        monkeypatch.setenv("MEDALLION_WAREHOUSE_URL", url)
    graph = build_definitions(demo_project).resolve_asset_graph()
    kinds = set(graph.get(key("gold.revenue_by_region")).kinds)
    assert {kind, "spark", "iceberg"} <= kinds and "redshift" not in kinds
    assert "parquet" not in set(graph.get(key("silver.orders_usd")).kinds)


def test_columns_keep_their_source_description_through_the_layers(graph):
    """A column taken from one upstream column keeps what sources.yaml says of it; a column
    whose type the SQL does not tell is blank, never "unknown"."""
    for table in ("bronze.orders", "silver.orders_usd"):
        columns = {
            c.name: c for c in graph.get(key(table)).metadata["dagster/column_schema"].columns
        }
        assert columns["order_ts"].description == "When the order was placed (UTC)."
        assert all(c.type != "unknown" for c in columns.values())


def test_bronze_is_tagged_s3_and_pii_flows_into_tags(graph):
    customers = graph.get(key("bronze.customers"))
    assert "s3" in customers.kinds
    assert customers.tags["pii"] == "true"
    assert graph.get(key("gold.revenue_by_region")).tags["pii"] == "false"


def test_daily_partitioned_tables_have_daily_partitions(graph, demo_catalog):
    starts = [
        d.settings.partitions.start for d in demo_catalog.datasets.values() if d.settings.partitions
    ]
    for name, dataset in demo_catalog.datasets.items():
        node = graph.get(key(name))
        if dataset.settings.partitions is None:
            assert node.partitions_def is None, name
        else:
            assert isinstance(node.partitions_def, dg.DailyPartitionsDefinition), name
            assert node.partitions_def.start.date() == min(starts)


def test_daily_tables_with_different_starts_share_one_job_and_schedule(tmp_path, monkeypatch):
    """A pipeline's daily tables may start on different days: the project's daily partitions
    begin at the earliest start, so every job (pipeline, layer, relaunch) still resolves."""
    root = tmp_path / "p"
    shutil.copytree(REPO / "sql", root / "sql")
    shutil.copytree(REPO / "metadata", root / "metadata")
    path = root / "metadata" / "datasets.yaml"
    lines = path.read_text().splitlines(keepends=True)
    gold = next(i for i, line in enumerate(lines) if line.strip() == "gold.daily_user_events:")
    later = next(i for i, line in enumerate(lines) if "partitions:" in line and i > gold)
    lines[later] = lines[later].replace("2026-01-01", "2026-02-01")
    path.write_text("".join(lines))
    defs = build_definitions(root)
    jobs = {job.name: job for job in defs.resolve_all_job_defs()}
    assert {"analytics", "medallion_relaunch"} <= set(jobs)
    assert str(jobs["analytics"].partitions_def.start.date()) == "2026-01-01"
    # the later table's own start holds: a day before it builds nothing, said so
    monkeypatch.setenv("MEDALLION_HOME", str(tmp_path / "home"))
    instance = dg.DagsterInstance.ephemeral()
    result = jobs["analytics"].execute_in_process(
        instance=instance,
        partition_key="2026-01-15",
        asset_selection=[dg.AssetKey(["gold", "daily_user_events"])],
    )
    assert result.success
    assert not result.get_asset_materialization_events()
    logs = instance.all_logs(result.run_id)
    said = [e.user_message for e in logs if "nothing to build" in e.user_message]
    assert said and "partitions.start 2026-02-01" in said[0]


def test_jobs_per_pipeline_and_schedules_from_cron(defs, demo_catalog):
    jobs = {job.name: job for job in defs.resolve_all_job_defs()}
    for pipeline_id in demo_catalog.pipelines:
        assert pipeline_id in jobs
    # a layer is an asset group, not a job of its own
    assert not any(name.startswith("layer_") for name in jobs)
    groups = {s.group_name for s in defs.resolve_asset_graph().asset_nodes}
    assert {"bronze", "silver", "gold"} <= groups
    ingest = jobs["ingest"]
    selected = {".".join(k.path) for k in ingest.asset_layer.selected_asset_keys}
    # one job holds the pipeline's whole tables and its daily ones
    assert selected == set(demo_catalog.pipeline_datasets("ingest"))
    schedules = {s.name: s for s in defs.schedules}
    assert set(schedules) == {
        f"{p}_schedule" for p, pipeline in demo_catalog.pipelines.items() if pipeline.schedule
    }
    for pipeline_id, pipeline in demo_catalog.pipelines.items():
        if pipeline.schedule and pipeline_id in jobs:
            assert schedules[f"{pipeline_id}_schedule"].cron_schedule == pipeline.schedule


def test_a_sensor_watches_every_raw_source(defs, demo_catalog):
    names = {s.name for s in defs.sensors}
    assert names == {f"new_objects__{source}" for source in demo_catalog.sources} | {
        "kill_switch",
        "audit_run_succeeded",
        "audit_run_failed",
        "audit_run_canceled",
        "relaunch_failed_runs",
        "system_pools",
        "run_priorities",
    }


def test_retry_policy_and_pool_come_from_metadata(defs, demo_catalog):
    from medallion_assets.healing.diagnosis import Diagnosis
    from medallion_assets.healing.retry import decide, policy_of

    assets = {a.key: a for a in defs.assets if isinstance(a, dg.AssetsDefinition)}
    dataset = demo_catalog.datasets["silver.orders_usd"]
    definition = assets[key("silver.orders_usd")]
    assert definition.op.pool == dataset.system
    policy = demo_catalog.retry_policies[
        dataset.settings.retry_policy or demo_catalog.default_retry_policy
    ]
    # The step retries itself by the policy in force (adapters/retry.py): as many retries as
    # the metadata says, then it fails.
    assert policy_of(demo_catalog, dataset) == policy and policy.max_retries > 0
    transient = Diagnosis("UNCLASSIFIED", None)
    last = decide(transient, policy, attempt=policy.max_retries)
    assert last.action == "retry" and last.max_retries == policy.max_retries
    assert decide(transient, policy, attempt=policy.max_retries + 1).action == "exhausted"


def test_no_step_carries_a_dagster_retry_policy(defs):
    """One retry mechanism: the step's own RetryRequested with the planner's delays. A Dagster
    RetryPolicy on an asset or a job would retry a second way, behind the healing's back."""
    assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
    assert assets and all(a.op.retry_policy is None for a in assets)
    for job in defs.resolve_all_job_defs():
        assert job.op_retry_policy is None, job.name
        assert all(node.retry_policy is None for node in job.graph.node_dict.values()), job.name


@pytest.mark.slow
def test_dagster_definitions_validate_passes(tmp_path: Path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    dagster = Path(sys.executable).parent / "dagster"
    result = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Validation successful" in result.stderr + result.stdout


def test_build_definitions_resolves_with_the_collector_paused_and_restores_it(demo_project):
    """The code location resolves its graph and jobs inside ``build_definitions`` (collector
    paused), leaves them cached for the code server, and always turns the collector back on."""
    import gc

    from medallion_assets.adapters import code_location as build

    seen: list[bool] = []
    original = build.definitions_for

    def spy(catalog, translator, **options):
        seen.append(gc.isenabled())
        return original(catalog, translator, **options)

    assert gc.isenabled()
    build.definitions_for = spy
    try:
        built = build.build_definitions(demo_project)
    finally:
        build.definitions_for = original
    assert seen == [False]
    assert gc.isenabled()
    assert "medallion_relaunch" in {job.name for job in built.resolve_all_job_defs()}

    (demo_project / "metadata" / "datasets.yaml").write_text("datasets: [unclosed\n")
    with pytest.raises(Exception, match=r"datasets\.yaml"):
        build.build_definitions(demo_project)
    assert gc.isenabled()


def test_the_retry_policy_in_force_is_the_datasets_then_the_pipelines_then_the_projects(
    demo_catalog,
):
    from medallion_assets.healing.retry import policy_of

    policies = demo_catalog.retry_policies
    vendor = demo_catalog.datasets["bronze.address_validation_feed"]  # its own: none
    assert policy_of(demo_catalog, vendor, "ingest") == policies["none"]
    orders = demo_catalog.datasets["bronze.orders"]  # none of its own
    assert policy_of(demo_catalog, orders, "ingest") == policies["fast"]  # the pipeline's
    assert policy_of(demo_catalog, orders) == policies["standard"]  # the project default
    assert policy_of(demo_catalog, orders, "no_such_pipeline") == policies["standard"]


def test_a_pipelines_schedule_requests_its_tables_and_the_day_that_just_ended(
    defs, demo_catalog, tmp_path, monkeypatch
):
    from datetime import UTC, datetime

    from medallion_assets.adapters.resources import ControlResource

    monkeypatch.setenv("MEDALLION_HOME", str(tmp_path))
    monkeypatch.delenv("MEDALLION_CONTROL_URL", raising=False)
    schedule = next(s for s in defs.schedules if s.name == "ingest_schedule")
    context = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 21, 0, 5, tzinfo=UTC),
        resources={"control": ControlResource(project_root=str(REPO))},
        repository_def=defs.get_repository_def(),
    )
    whole, day = schedule.evaluate_tick(context).run_requests
    assert whole.partition_key is None and day.partition_key == "2026-11-20"
    assert whole.tags["pipeline"] == day.tags["pipeline"] == "ingest"
    assert {".".join(k.path) for k in day.asset_selection} == {"bronze.user_events"}
    assert {".".join(k.path) for k in whole.asset_selection} == {
        n for n in demo_catalog.pipeline_datasets("ingest") if n != "bronze.user_events"
    }
    # the day is the run key: every later tick of the same day asks for it again, and
    # Dagster launches it once
    later = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 11, 21, 6, 5, tzinfo=UTC),
        resources={"control": ControlResource(project_root=str(REPO))},
        repository_def=defs.get_repository_def(),
    )
    again = schedule.evaluate_tick(later).run_requests
    assert again[1].run_key == day.run_key and again[0].run_key != whole.run_key


def test_schedules_wait_stopped_unless_their_pipeline_says_schedule_running(defs, demo_catalog):
    """Opening the UI on a project launches nothing by itself: the demo's schedules are all
    stopped; a pipeline with ``schedule_running: true`` (and enabled) starts running."""
    from medallion_assets.adapters.jobs import build_jobs, build_schedules

    assert {s.default_status for s in defs.schedules} == {dg.DefaultScheduleStatus.STOPPED}
    # The sensors that launch work wait stopped too; the control plane's own keep running.
    launching = {s.name: s.default_status for s in defs.sensors if s.name.startswith("new_objects")}
    assert launching and set(launching.values()) == {dg.DefaultSensorStatus.STOPPED}
    pipelines = {
        pid: p.model_copy(update={"schedule_running": pid == "ingest"})
        for pid, p in demo_catalog.pipelines.items()
    }
    catalog = replace(demo_catalog, pipelines=pipelines)
    running = {
        s.name
        for s in build_schedules(catalog, build_jobs(catalog), DatasetTranslator(catalog))
        if s.default_status == dg.DefaultScheduleStatus.RUNNING
    }
    assert running == {"ingest_schedule"} & {s.name for s in defs.schedules}
