"""``medallion backfill``: the preview of a two-day backfill (tables x days downstream, the
warehouse table it reloads, simulated time), then the backfill launched through the CLI onto
the project instance, run by a real ``dagster dev`` daemon a day per run, and seen successful
through the webserver's GraphQL, with both days of both tables in the lake."""

from __future__ import annotations

import json
import os
import time

import pytest
from click.testing import CliRunner

from medallion_assets.cli import cli
from medallion_assets.lake import Lake
from tests.adapters.faults.project import DAYS, faults_project
from tests.conftest import REPO
from tests.webserver import running_webserver, server_env

pytestmark = pytest.mark.slow

BACKFILL = """
query Backfill($id: String!) { partitionBackfillOrError(backfillId: $id) { __typename
    ... on PartitionBackfill { id status numPartitions title
        assetBackfillData { assetBackfillStatuses { __typename
            ... on AssetPartitionsStatusCounts { assetKey { path } numPartitionsTargeted
                numPartitionsMaterialized numPartitionsFailed } } } }
    ... on PythonError { message } } }
"""
DONE = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}
TIMEOUT_S = 420.0


def test_a_backfill_is_previewed_then_run_by_dagster_dev_and_seen_through_graphql(
    tmp_path, monkeypatch
):
    root = faults_project(tmp_path)
    home = tmp_path / "dagster_home"
    env = server_env(root / ".medallion") | {"MEDALLION_PROJECT": str(root)}
    for name in [n for n in os.environ if n.startswith("MEDALLION_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("MEDALLION_HOME", str(root / ".medallion"))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    days = f"{DAYS[0]}...{DAYS[-1]}"

    def medallion(*args: str):
        return CliRunner().invoke(cli, [*args, "--project", str(root)])

    preview = medallion("backfill", "--select", "bronze.events", "--partitions", days, "--preview")
    assert preview.exit_code == 0, preview.output
    assert "2 table(s), 4 build(s)" in preview.output
    assert "analytics.daily_events" in preview.output
    found = json.loads(
        medallion(
            "backfill", "--select", "bronze.events", "--partitions", days, "--preview",
            "--format", "json",
        ).output
    )  # fmt: skip
    assert found["tables"] == [
        {"table": "bronze.events", "partitions": list(DAYS)},
        {"table": "gold.daily_events", "partitions": list(DAYS)},
    ]
    assert found["backfill_id"] is None and found["simulated_s"] > 0
    assert not (home / "dagster.yaml").exists()  # a preview launches nothing

    launched = medallion("backfill", "--select", "bronze.events", "--partitions", days)
    assert launched.exit_code == 0, launched.output
    backfill_id = launched.output.split("launched backfill ", 1)[1].split()[0]

    with running_webserver(REPO / "workspace.yaml", home, env, dev=True) as server:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            answer = server.graphql(BACKFILL, {"id": backfill_id})["partitionBackfillOrError"]
            assert answer["__typename"] == "PartitionBackfill", answer
            if answer["status"] in DONE or time.monotonic() > deadline:
                break
            time.sleep(2)
        log = server.log.read_text(errors="replace")[-4000:]
        assert answer["status"] in ("COMPLETED", "COMPLETED_SUCCESS"), (answer, log)
        assert answer["title"].startswith("medallion backfill bronze.events")
        counts = {
            ".".join(s["assetKey"]["path"]): (
                s["numPartitionsTargeted"],
                s["numPartitionsMaterialized"],
                s["numPartitionsFailed"],
            )
            for s in answer["assetBackfillData"]["assetBackfillStatuses"]
        }
        assert set(counts.values()) == {(2, 2, 0)}, counts
    lake = Lake.local(root / ".medallion" / "lake")
    for table in ("bronze.events", "gold.daily_events"):
        assert lake.partitions(table) == list(DAYS), table
