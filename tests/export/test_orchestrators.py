"""`medallion export airflow|prefect|kestra` (pure): one flow per enabled pipeline, one task per
table, dependencies from lineage, retries from policies.yaml, schedules from pipelines.yaml;
the Kestra flows checked against Kestra's flow structure, the Python compiled. Loading the
Airflow DAGs in a real DagBag and running a Prefect flow: tests/adapters/test_exports.py."""

from __future__ import annotations

import re
from pathlib import PurePath

import pytest
import yaml
from click.testing import CliRunner

from medallion_assets.cli import cli
from medallion_assets.export.orchestrators import flows, generate, task_id
from medallion_assets.healing.retry import policy_of
from tests.conftest import REPO

PROJECT = PurePath("/srv/theworldshop")
KESTRA_ID = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]*$")
KESTRA_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def test_a_flow_per_enabled_pipeline_with_its_tables_lineage_and_retries(demo_catalog):
    found = {f.pipeline: f for f in flows(demo_catalog)}
    assert set(found) == {p.id for p in demo_catalog.pipelines.values() if p.enabled}
    for name, flow in found.items():
        pipeline = demo_catalog.pipelines[name]
        assert flow.schedule == pipeline.schedule
        tables = [t.table for t in flow.tasks]
        assert sorted(tables) == sorted(demo_catalog.pipeline_datasets(name))
        for position, task in enumerate(flow.tasks):
            parents = demo_catalog.lineage.dag.parents(task.table)
            assert set(task.upstream) == set(parents) & set(tables)
            assert all(tables.index(u) < position for u in task.upstream)  # a valid order
            policy = policy_of(demo_catalog, demo_catalog.datasets[task.table], name)
            assert task.retries == (policy.max_retries if policy else 0)
            daily = demo_catalog.datasets[task.table].settings.partitions is not None
            assert task.daily == daily


def kestra_flows(catalog) -> dict[str, dict]:
    return {n: yaml.safe_load(t) for n, t in generate(catalog, "kestra", PROJECT).items()}


def test_kestra_flows_have_kestras_structure_and_the_lineage(demo_catalog):
    by_pipeline = {f.pipeline: f for f in flows(demo_catalog)}
    documents = kestra_flows(demo_catalog)
    assert len(documents) == len(by_pipeline)
    for document in documents.values():
        assert set(document) >= {"id", "namespace", "tasks"}
        assert KESTRA_ID.match(document["id"]) and KESTRA_NAMESPACE.match(document["namespace"])
        flow = by_pipeline[document["labels"]["pipeline"]]
        (dag,) = document["tasks"]
        assert dag["type"] == "io.kestra.plugin.core.flow.Dag" and KESTRA_ID.match(dag["id"])
        ids = [entry["task"]["id"] for entry in dag["tasks"]]
        assert len(set(ids)) == len(ids) and all(KESTRA_ID.match(i) for i in ids)
        graph = {entry["task"]["id"]: set(entry.get("dependsOn", [])) for entry in dag["tasks"]}
        assert graph == {task_id(t.table): {task_id(u) for u in t.upstream} for t in flow.tasks}
        for entry, task in zip(dag["tasks"], flow.tasks, strict=True):
            step = entry["task"]
            assert step["type"] == "io.kestra.plugin.scripts.shell.Commands"
            (command,) = step["commands"]
            assert command.startswith(f"medallion build {task.table} ")
            assert command.endswith(f"--project {PROJECT}")
            assert ("--partition" in command) == task.daily
            assert " --no-retry " in command  # one place retries: Kestra's, from the policy
            if task.retries:
                assert step["retry"]["maxAttempts"] == task.retries + 1
                assert re.match(r"^PT[0-9.]+S$", step["retry"]["interval"])
            else:
                assert "retry" not in step
        (trigger,) = document["triggers"]
        assert trigger["type"] == "io.kestra.plugin.core.trigger.Schedule"
        assert trigger["cron"] == flow.schedule


@pytest.mark.parametrize("target", ["airflow", "prefect"])
def test_the_python_compiles_and_runs_medallion_build_per_table(demo_catalog, target):
    files = generate(demo_catalog, target, PROJECT)
    assert len(files) == len(flows(demo_catalog))
    for name, text in files.items():
        compile(text, name, "exec")
    for flow in flows(demo_catalog):
        text = next(t for t in files.values() if f"{flow.pipeline!r}" in t)
        for task in flow.tasks:
            assert f"build {task.table}" in text or f"build({task.table!r}" in text
        # the orchestrator retries with the policy; medallion build makes one attempt each
        assert "--no-retry" in text
        if target == "prefect":  # and does not retry what another attempt would not fix
            assert text.count("retry_condition_fn=worth_retrying") == len(flow.tasks)


def test_export_writes_one_file_per_pipeline(tmp_path):
    done = CliRunner().invoke(
        cli, ["export", "kestra", "--out", str(tmp_path), "--project", str(REPO)]
    )
    assert done.exit_code == 0, done.output
    assert len(list(tmp_path.glob("*.yml"))) == len(flows_of_repo())


def flows_of_repo():
    from medallion_assets.catalog import load_catalog

    return flows(load_catalog(REPO))
