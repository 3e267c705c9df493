"""OpenLineage's view of the demo catalog (pure), the design-time export, and the emitter's
bounds: a collector that is slow, refuses or is gone never holds a step past its timeout."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from openlineage.client.serde import Serde

from medallion_assets.cli import cli
from medallion_assets.io.openlineage import LineageEmitter, configured
from medallion_assets.openlineage.events import (
    Naming,
    column_edges,
    column_lineage,
    dataset_name,
    node_names,
    static_events,
)
from tests.conftest import REPO
from tests.lineage_receiver import (
    check_event,
    http_client,
    lineage_receiver,
    openlineage_env,
)

NAMING = Naming("shop", Path("/lake"), "postgres://wh:5432", "analytics.")


def test_sources_are_s3_prefixes_and_tables_are_lake_folders(demo_catalog):
    orders = dataset_name(demo_catalog, "raw.orders", NAMING)
    assert (orders.namespace, orders.name) == ("s3://theworldshop-raw", "orders")
    table = dataset_name(demo_catalog, "silver.orders_usd", NAMING)
    assert (table.namespace, table.name) == ("file", "/lake/silver/orders_usd")
    assert len(node_names(demo_catalog, NAMING)) == len(demo_catalog.sources) + len(
        demo_catalog.datasets
    )


@pytest.mark.parametrize("table", ["silver.orders_usd", "silver.users_masked", "gold.customer_ltv"])
def test_column_lineage_round_trips_to_the_lineage_engines_edges(demo_catalog, table):
    facet = column_lineage(demo_catalog, table, NAMING)
    assert facet is not None
    as_json = json.loads(Serde.to_json(facet))
    found = column_edges(as_json, node_names(demo_catalog, NAMING), table)
    engine = {(e.source, e.target, e.transform) for e in demo_catalog.lineage.columns_in(table)}
    assert found == engine and engine


def test_masked_columns_are_marked_masking(demo_catalog):
    facet = json.loads(Serde.to_json(column_lineage(demo_catalog, "silver.users_masked", NAMING)))
    steps = [
        step
        for spec in facet["fields"].values()
        for field in spec["inputFields"]
        for step in field["transformations"]
    ]
    masked = [s for s in steps if s["description"] == "masked"]
    assert masked and all(s["masking"] and s["subtype"] == "TRANSFORMATION" for s in masked)
    assert not any(s["masking"] for s in steps if s["description"] != "masked")


def test_static_export_has_one_job_per_table_with_its_inputs_and_outputs(demo_catalog):
    events = [json.loads(Serde.to_json(e)) for e in static_events(demo_catalog, NAMING)]
    assert sorted(e["job"]["name"] for e in events) == sorted(demo_catalog.datasets)
    for event in events:
        table = event["job"]["name"]
        dataset = demo_catalog.datasets[table]
        parents = demo_catalog.lineage.dag.parents(table)
        assert len(event["inputs"]) == len(parents)
        lake = dataset_name(demo_catalog, table, NAMING)
        assert (event["outputs"][0]["namespace"], event["outputs"][0]["name"]) == (
            lake.namespace,
            lake.name,
        )
        assert event["job"]["facets"]["sql"]["query"] == dataset.sql
        if dataset.target is not None:
            warehouse = event["outputs"][1]
            assert warehouse["namespace"] == "postgres://wh:5432"
            assert warehouse["name"] == f"analytics.{dataset.target.warehouse_table}"
        for facet in event["job"]["facets"].values():
            assert facet["_producer"] == "https://github.com/medallion-assets/medallion_assets"


def test_lineage_export_writes_and_sends_the_events(tmp_path):
    out = tmp_path / "lineage.ndjson"
    args = ["lineage", "export", "--format", "openlineage", "--out", str(out), "--send"]
    with lineage_receiver() as receiver, openlineage_env(OPENLINEAGE_URL=receiver.url):
        done = CliRunner().invoke(cli, [*args, "--project", str(REPO)])
        assert done.exit_code == 0, done.output
        written = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(written) == len(receiver.events) > 0
        assert [e["job"]["name"] for e in written] == [e["job"]["name"] for e in receiver.events]
    with openlineage_env(OPENLINEAGE_DISABLED="true"):
        done = CliRunner().invoke(cli, [*args, "--project", str(REPO)])
    assert done.exit_code == 2 and "OpenLineage is not configured" in done.output


def test_openlineage_is_off_unless_configured(tmp_path):
    assert not configured({}, cwd=tmp_path)
    (tmp_path / "openlineage.yml").write_text("transport:\n  type: console\n")
    assert configured({}, cwd=tmp_path)
    assert not configured({"OPENLINEAGE_DISABLED": "true"}, cwd=tmp_path)


def event_of(demo_catalog):
    return static_events(demo_catalog, NAMING, ["silver.orders_usd"])[0]


def test_a_slow_collector_holds_an_emit_no_longer_than_the_timeout(demo_catalog):
    warned: list[str] = []
    with lineage_receiver() as receiver:
        receiver.delay_s = 5.0
        emitter = LineageEmitter(timeout=0.5, client=http_client(receiver.url))
        started = time.monotonic()
        assert not emitter.emit(event_of(demo_catalog), warn=warned.append)
        assert time.monotonic() - started < 1.5
    assert "not sent within 0.5 s" in warned[0]


@pytest.mark.parametrize("status", [500, None])
def test_a_refusing_or_missing_collector_is_a_warning(demo_catalog, status):
    warned: list[str] = []
    with lineage_receiver() as receiver:
        url = receiver.url
        receiver.status = status or 200
    if status is not None:  # a collector that answers 500
        with lineage_receiver() as receiver:
            receiver.status = status
            emitter = LineageEmitter(timeout=5, client=http_client(receiver.url))
            assert not emitter.emit(event_of(demo_catalog), warn=warned.append)
    else:  # nothing listens any more
        emitter = LineageEmitter(timeout=5, client=http_client(url))
        assert not emitter.emit(event_of(demo_catalog), warn=warned.append)
    assert warned and "event not sent" in warned[0]


def test_a_design_time_event_has_the_spec_shape(demo_catalog):
    event = json.loads(Serde.to_json(event_of(demo_catalog)))
    # a JobEvent is a RunEvent without run and eventType
    check_event(
        {**event, "eventType": "OTHER", "run": {"runId": "0" * 8 + "-0000-0000-0000-" + "0" * 12}}
    )
