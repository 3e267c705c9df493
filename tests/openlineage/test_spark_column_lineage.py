"""Spark's own column lineage of every demo table against the lineage medallion reads from the
SQL (``medallion lineage TABLE --columns``).

The demo runs on an Iceberg REST catalog (SeaweedFS) with OpenLineage configured, so the
driver carries OpenLineage's Spark listener (``io/spark_lineage.py``): for each staged write it
reports the column lineage of the plan Spark executed. Every edge one side has and the other
lacks is either a defect (the test fails) or listed in ``KNOWN`` with the reason it stays.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medallion_assets.catalog import Catalog, load_catalog
from medallion_assets.cli import cli
from tests import seaweed_server
from tests.conftest import copy_demo_project
from tests.lineage_receiver import lineage_receiver
from tests.seaweed_server import SECRET_KEY, Seaweed

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-c", "from medallion_assets.cli import main; main()"]
SPARK_PRODUCER = "/integration/spark"
Edge = tuple[str, str, str]  # (table, input column as layer.table.column, output column)

INGEST_COLUMNS = ("_ingested_at", "_source_file", "_batch_id")
INGESTED = (
    "medallion adds it while ingesting: the static lineage draws it from the raw source, "
    "Spark sees a literal or the object's name"
)
DISTINCT = (
    "an aggregate beside count(DISTINCT ...): Spark rewrites distinct aggregates through an "
    "Expand, across which OpenLineage 1.53 traces no column"
)
BAND_SUMS = (
    "a count over a band join, which medallion runs as running counts (lineage/band_sums.py): "
    "each count is a running sum partitioned by the join's keys and ordered by the band's "
    "values, so Spark's lineage reads those columns into the count; the SQL uses them only to "
    "join"
)
_WINDOWED = ("events_24h", "sessions_24h", "failed_logins_24h")
_BAND_COLUMNS = (
    "silver.orders_usd.customer_id",
    "silver.orders_usd.order_ts",
    "silver.user_events.customer_id",
    "silver.user_events.event_ts",
)
KNOWN: dict[Edge, str] = {
    **{
        ("gold.fraud_features", column, output): BAND_SUMS
        for column in _BAND_COLUMNS
        for output in _WINDOWED
    },
    ("gold.revenue_by_region", "silver.orders_usd.order_id", "order_count"): DISTINCT,
    ("gold.revenue_by_region", "silver.orders_usd.customer_id", "customer_count"): DISTINCT,
    ("gold.revenue_by_region", "silver.orders_usd.total_amount_usd", "revenue_usd"): DISTINCT,
    (
        "gold.revenue_by_region",
        "silver.orders_usd.total_amount_usd",
        "avg_order_value_usd",
    ): DISTINCT,
    ("gold.daily_user_events", "silver.user_events.session_id", "session_count"): DISTINCT,
    (
        "gold.daily_user_events",
        "silver.user_events.customer_id",
        "known_customer_count",
    ): DISTINCT,
}


def known(edge: Edge) -> str | None:
    """Why a difference stays, or None (a defect)."""
    _, source, column = edge
    if source.startswith("raw.") and column in INGEST_COLUMNS:
        return INGESTED
    return KNOWN.get(edge)


# OpenLineage's Spark listener handles Spark's events on a queue of its own; when it falls
# behind (a loaded machine), Spark has already dropped an execution's QueryExecution and the
# listener logs "Query execution is null: can't emit event" and sends nothing for it
# (OpenLineage issues 1646 and 3341, open in 1.53). That is a lost report, not a difference in
# lineage: a table whose staged write went unreported while the log shows that race is built
# again (`medallion build TABLE --rebuild`, the listener still reporting to the same
# receiver); a report Spark did send is never hidden.
UPSTREAM_RACE = "Query execution is null: can't emit event"
REBUILDS = 2


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The demo run on a fresh SeaweedFS (REST catalog and S3), every event kept."""
    folder = tmp_path_factory.mktemp("spark-lineage")
    project = copy_demo_project(folder / "theworldshop")
    server_folder = folder / "seaweed"
    server_folder.mkdir()
    servers = seaweed_server.start(server_folder)
    seaweed: Seaweed = next(servers)
    try:
        with lineage_receiver() as receiver:
            base = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("MEDALLION_", "AWS_", "OPENLINEAGE"))
            }
            env = {
                **base,
                **seaweed.env(),
                "MEDALLION_HOME": str(folder / "state"),
                "OPENLINEAGE_URL": receiver.url,
            }

            def medallion(*args: str) -> subprocess.CompletedProcess[str]:
                command = [*CLI, *args, "--project", str(project)]
                return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)

            # One step at a time: fewer executions at once keep the listener closer behind.
            # One day: each daily table is built once, as every other table is.
            results = [
                medallion("demo-data", "--rows", "500", "--days", "1"),
                medallion("run", "--max-workers", "1"),
            ]
            log = folder / "state" / "logs" / "spark.log"
            for _ in range(REBUILDS):
                missing = _unreported(project, receiver.events)
                if not missing or UPSTREAM_RACE not in log.read_text(errors="replace"):
                    break
                for table in sorted(missing):
                    medallion("build", table, "--rebuild", *_a_day(medallion, table))
            yield {"project": project, "results": results, "events": list(receiver.events)}
    finally:
        servers.close()


def _a_day(medallion: Any, table: str) -> list[str]:
    """``--partition DAY`` for a daily table (a day it has), else nothing."""
    history = medallion("table", "history", table, "--json").stdout.splitlines()
    days = [json.loads(line).get("partition") for line in history if line.startswith("{")]
    return next((["--partition", d] for d in days if d), [])


def _unreported(project: Path, events: list[dict[str, Any]]) -> set[str]:
    catalog = load_catalog(project)
    spark = [e for e in events if SPARK_PRODUCER in e.get("producer", "")]
    return set(catalog.datasets) - {table for table, _, _ in spark_edges(spark, catalog)}


def _table_of(dataset: dict[str, Any], catalog: Catalog) -> str:
    """A dataset as the project names it: a lake table by its symlink (``silver.orders``), a raw
    object by the source whose bucket and prefix hold it (``raw.orders``)."""
    for link in dataset.get("facets", {}).get("symlinks", {}).get("identifiers", []):
        if link.get("type") == "TABLE":
            return re.sub(r"\.branch_\w+$", "", link["name"])
    namespace, name = dataset["namespace"], dataset["name"]
    for source_name, source in catalog.sources.items():
        if namespace == f"s3://{source.bucket}" and f"{name}/".startswith(source.prefix):
            return f"raw.{source_name}"
    return f"{namespace}/{name}"


def spark_edges(events: list[dict[str, Any]], catalog: Catalog) -> set[Edge]:
    """Column lineage of the staged writes (to a ``branch_medallion_stage_*`` of a table)."""
    names: dict[tuple[str, str], str] = {}
    for event in events:
        for dataset in event.get("inputs", []):
            names[dataset["namespace"], dataset["name"]] = _table_of(dataset, catalog)
    edges: set[Edge] = set()
    for event in events:
        if event["eventType"] != "COMPLETE":
            continue
        for output in event.get("outputs", []):
            links = output.get("facets", {}).get("symlinks", {}).get("identifiers", [])
            if not any(".branch_medallion_stage_" in link["name"] for link in links):
                continue  # the table's creation, with no rows
            table = _table_of(output, catalog)
            if table.endswith("__quarantine"):
                continue  # bronze's rejected raw records: no SQL file writes them
            lineage = output["facets"].get("columnLineage", {}).get("fields", {})
            for column, field in lineage.items():
                for source in field["inputFields"]:
                    key = (source["namespace"], source["name"])
                    name = names.get(key) or _table_of(
                        {"namespace": key[0], "name": key[1]}, catalog
                    )
                    edges.add((table, f"{name}.{source['field']}", column))
    return edges


def static_edges(project: Path, tables: list[str]) -> set[Edge]:
    """``medallion lineage TABLE --columns --format json``: each table's own column edges."""
    edges: set[Edge] = set()
    runner = CliRunner()
    for table in tables:
        args = ["lineage", table, "--columns", "--format", "json", "--upstream", "--depth", "1"]
        result = runner.invoke(cli, [*args, "--project", str(project)])
        assert result.exit_code == 0, result.output
        for edge in json.loads(result.output)["column_edges"]:
            if edge["to"].startswith(f"{table}."):
                edges.add((table, edge["from"], edge["to"][len(table) + 1 :]))
    return edges


def test_spark_reports_the_column_lineage_medallion_reads_from_the_sql(demo_run: dict[str, Any]):
    data, run = demo_run["results"]
    assert data.returncode == 0, data.stderr[-2000:]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert re.search(r"^\d+ built;", run.stdout, re.MULTILINE), run.stdout[-3000:]  # none failed
    project = demo_run["project"]
    catalog = load_catalog(project)
    events = [e for e in demo_run["events"] if SPARK_PRODUCER in e.get("producer", "")]
    assert events, "the driver sent no OpenLineage event"

    spark = spark_edges(events, catalog)
    assert {table for table, _, _ in spark} == set(catalog.datasets), "a table Spark never wrote"
    static = static_edges(project, sorted(catalog.datasets))
    differences = {edge: known(edge) for edge in spark ^ static}
    unexplained = sorted(
        ("spark only" if edge in spark else "static only", edge)
        for edge, why in differences.items()
        if why is None
    )
    assert not unexplained, "\n".join(f"{side}: {edge}" for side, edge in unexplained)
    # The list stays honest: a difference it names that no longer occurs is taken out of it.
    stale = [edge for edge in KNOWN if edge not in differences]
    assert not stale, f"KNOWN lists differences that no longer occur: {stale}"
    assert len(spark & static) >= 250  # the demo's tables agree on almost every edge


def test_sparks_runs_name_the_dagster_run_and_carry_no_credential(demo_run: dict[str, Any]):
    events = demo_run["events"]
    ours = [e for e in events if SPARK_PRODUCER not in e.get("producer", "")]
    spark = [e for e in events if SPARK_PRODUCER in e.get("producer", "")]
    dagster_runs = {e["run"]["facets"]["parent"]["run"]["runId"] for e in ours}
    assert dagster_runs, "the steps sent no event naming their Dagster run"
    for event in spark:
        parent = event["run"]["facets"]["parent"]
        root = parent.get("root", parent)
        assert root["run"]["runId"] in dagster_runs
        assert root["job"]["namespace"] == "medallion"
    assert SECRET_KEY not in json.dumps(events)
