"""The exported code in the real orchestrators, each installed from PyPI into a virtualenv of
the test's own (so their dependencies never meet this project's):

- the Airflow DAGs load in Airflow's DagBag with no import errors, with a DAG per pipeline on
  its cron, a task per table, the lineage as task dependencies and the retry policies;
- the Prefect flow of the minimal project runs locally (Prefect's own temporary server) and
  builds its tables in order through `medallion build`, into the lake; on a row a blocking
  check rejects, it fails without retrying the blocked table (exit 3) and builds nothing on it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.export.orchestrators import Flow, Task, flows, generate, task_id
from medallion_assets.lake import Lake
from tests.adapters.minimal import minimal_project, orders
from tests.conftest import REPO

pytestmark = pytest.mark.slow

INSTALL_TIMEOUT = 900


def installed(where: Path, *requirements: str) -> Path:
    """The python of a new virtualenv at ``where`` with ``requirements`` installed, by uv
    (a dev dependency): pip takes 70-90 s for Airflow or Prefect here, uv a fraction."""
    uv = str(Path(sys.executable).parent / "uv")
    made = subprocess.run(
        [uv, "venv", "-q", "--python", sys.executable, str(where)], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr[-3000:]
    python = where / "bin" / "python"
    done = subprocess.run(
        [uv, "pip", "install", "-q", "--python", str(python), *requirements],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return python


DAGBAG = """
import json, sys, warnings
warnings.simplefilter("ignore")
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
print(json.dumps({
    "errors": {str(k): str(v) for k, v in bag.import_errors.items()},
    "dags": {
        dag_id: {
            "cron": dag.timetable.expression,
            "tasks": {
                t.task_id: {
                    "upstream": sorted(t.upstream_task_ids),
                    "retries": t.retries,
                    "delay": t.retry_delay.total_seconds(),
                    "command": t.bash_command,
                }
                for t in dag.tasks
            },
        }
        for dag_id, dag in bag.dags.items()
    },
}))
"""


def test_the_airflow_dags_load_in_a_real_dagbag(tmp_path):
    python = installed(tmp_path / "airflow-venv", "apache-airflow>=3,<4")
    catalog = load_catalog(REPO)
    dags = tmp_path / "dags"
    dags.mkdir()
    for name, text in generate(catalog, "airflow", Path("/srv/theworldshop")).items():
        (dags / name).write_text(text)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "AIRFLOW_HOME": str(tmp_path / "airflow-home"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    done = subprocess.run(
        [str(python), "-c", DAGBAG, str(dags)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    bag = json.loads(done.stdout.strip().splitlines()[-1])
    assert bag["errors"] == {}
    expected = {f.pipeline: f for f in flows(catalog)}
    assert set(bag["dags"]) == set(expected)
    for dag_id, dag in bag["dags"].items():
        flow = expected[dag_id]
        assert dag["cron"] == flow.schedule
        assert set(dag["tasks"]) == {task_id(t.table) for t in flow.tasks}
        for task in flow.tasks:
            found = dag["tasks"][task_id(task.table)]
            assert found["upstream"] == sorted(task_id(u) for u in task.upstream)
            assert found["retries"] == task.retries
            assert found["delay"] == task.retry_delay_s
            assert f"build {task.table}" in found["command"]
            assert "--no-retry" in found["command"]  # Airflow's retries alone
            assert ("--partition {{ ds }}" in found["command"]) == task.daily


def flow_task(flow: Flow, table: str) -> Task:
    return next(t for t in flow.tasks if t.table == table)


def test_the_prefect_flow_builds_in_order_and_does_not_retry_a_blocked_table(tmp_path, monkeypatch):
    # Prefect 3.8's server declares Body(min_items=...), which FastAPI 0.155 and later refuse
    python = installed(tmp_path / "prefect-venv", "prefect>=3,<4", "fastapi<0.155")
    # A good row and one silver's blocking check rejects (country 'XX'): bronze builds, silver
    # is blocked (medallion build exits 3) and not retried, gold is not built on it. One flow
    # run, one Prefect server (each `medallion build` starts a Spark of its own).
    root, store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "DE"}
    )
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 1, "country": "xx"})
    )
    catalog = load_catalog(root, use_cache=False)
    medallion = str(Path(sys.executable).parent / "medallion")
    flows_dir = tmp_path / "flows"
    flows_dir.mkdir()
    files = generate(catalog, "prefect", root, medallion)
    for name, text in files.items():
        (flows_dir / name).write_text(text)
    (flow,) = flows(catalog)
    module, function = f"{task_id(flow.pipeline)}_flow", task_id(flow.pipeline)
    run = (
        f"import {module} as f\n"
        f"try:\n    f.{function}()\nexcept Exception as error:\n"
        "    print('FLOW FAILED:', type(error).__name__)\n"
        "else:\n    print('FLOW PASSED')\n"
    )
    env = {
        **{k: v for k, v in __import__("os").environ.items() if not k.startswith("PREFECT_")},
        "PREFECT_HOME": str(tmp_path / "prefect-home"),
        # Prefect's temporary server: no telemetry, and time to start on a busy machine
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
        "PYTHONPATH": str(flows_dir),
    }
    done = subprocess.run(
        [str(python), "-c", run],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-5000:]
    assert "FLOW FAILED" in done.stdout, done.stdout[-3000:]
    lake = Lake.local(root / ".medallion" / "lake")
    assert lake.current("bronze.orders").rows == 2  # built by the flow's first task
    assert lake.current("silver.orders_clean") is None  # the blocked build published nothing
    assert lake.current("gold.revenue") is None  # nothing built on it
    # One attempt of silver: the retry condition saw exit 3 and did not retry, although
    # policies.yaml gives it two retries (and medallion build made one attempt, --no-retry).
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    attempts = plane.store().audit(entities=["dataset:silver.orders_clean"])
    assert [e.kind for e in attempts].count("attempt") == 1, [e.message for e in attempts]
    assert flow_task(flow, "silver.orders_clean").retries == 2
