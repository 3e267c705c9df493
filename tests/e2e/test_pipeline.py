"""The whole TheWorldShop pipeline through Dagster on real components: moto's S3 server over
HTTP, a local Spark session, a PostgreSQL server as the warehouse. Every gold table must equal
an independent computation over the same raw data; a second run must change nothing."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import boto3
import dagster as dg
import pytest

from medallion_assets.adapters import resources
from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.headless import run_project
from medallion_assets.adapters.instance import project_instance
from medallion_assets.adapters.translator import DatasetTranslator, step_table
from medallion_assets.catalog import load_catalog
from medallion_assets.cli.run_report import incremental
from medallion_assets.demo import DemoSettings, generate, write_files
from medallion_assets.io.s3_store import Boto3ObjectStore
from medallion_assets.io.warehouse import PostgresWarehouse
from medallion_assets.lake import Lake
from medallion_assets.testing import read_table
from tests.adapters.lineage_runs import lineage_runs
from tests.conftest import copy_demo_project
from tests.e2e import reference
from tests.e2e.readme_tour import follow_the_tour
from tests.lineage_receiver import check_event, lineage_receiver, openlineage_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, s3_server, postgres_server, spark):
    """Generate raw data into moto, run everything once, keep what the tests compare."""
    with contextlib.ExitStack() as stack:
        yield from _pipeline(stack, tmp_path_factory, s3_server, postgres_server)


def _pipeline(stack, tmp_path_factory, s3_server, postgres_server):
    root = copy_demo_project(tmp_path_factory.mktemp("e2e") / "theworldshop")
    home = root / ".medallion"
    env = {
        "MEDALLION_HOME": str(home),
        "MEDALLION_S3_ENDPOINT": s3_server.endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "MEDALLION_WAREHOUSE_URL": postgres_server.dsn,
        "MEDALLION_MAX_WORKERS": "2",  # steps two at a time, whatever the machine's cores
    }
    patch = pytest.MonkeyPatch()
    # every step's OpenLineage events go to a receiver of the test's (test_*openlineage*)
    receiver = stack.enter_context(lineage_receiver())
    stack.enter_context(
        openlineage_env(OPENLINEAGE_URL=receiver.url, OPENLINEAGE_NAMESPACE="theworldshop")
    )
    for name, value in env.items():
        patch.setenv(name, value)
    catalog = load_catalog(root)
    store = Boto3ObjectStore(s3_server.endpoint_url)
    # A clean vendor feed: every table builds, so every gold table can be compared (the 'UK'
    # mistake and the check that blocks it are tested on their own).
    clean = DemoSettings(rows=400, days=2, seed=7, vendor_uk_rate=0)
    write_files(generate(catalog, clean), store)
    # The project's own persistent instance, as `medallion run` uses: the days of the daily
    # tables run beside the rest (an ephemeral instance's storage takes one run at a time).
    with project_instance(root, {}, catalog.profiles) as instance:
        first = run_project(root, log=lambda _m: None, instance=instance)
        first_events = list(receiver.events)
        lake = Lake.local(
            home / "lake"
        )  # the versions the first run published, before later tests'
        first_versions = {
            (r.table, r.partition): lake.current(r.table, r.partition) for r in first.results
        }
        client = boto3.client("s3", endpoint_url=s3_server.endpoint_url, region_name="us-east-1")
        expected, malformed = reference.compute(catalog, client)
        yield {
            "root": root,
            "catalog": catalog,
            "first": first,
            "expected": expected,
            "malformed": malformed,
            "instance": instance,
            "home": home,
            "dsn": postgres_server.dsn,
            "s3": s3_server.endpoint_url,
            "events": first_events,
            "first_versions": first_versions,
            "receiver": receiver,
        }
    patch.undo()


def lake_rows(pipeline, table: str) -> list[tuple]:
    frame = read_table(table, lake_root=pipeline["home"] / "lake")
    return reference.normalise([tuple(r) for r in frame.itertuples(index=False)])


def reference_rows(pipeline, table: str) -> list[tuple]:
    return reference.normalise(pipeline["expected"].execute(f"SELECT * FROM {table}").fetchall())


def test_the_first_run_materializes_every_table(pipeline):
    first = pipeline["first"]
    assert first.success
    built = {r.table for r in first.results if not r.skipped}
    assert built == set(pipeline["catalog"].datasets)
    # Each day's row carries that day's own check results, not the first day's.
    days = [r for r in first.results if r.table == "bronze.user_events"]
    assert len(days) == 2 and all(len(r.checks) == len(days[0].checks) > 0 for r in days)
    assert first.rows_written == sum(r.current_rows for r in first.results)


def step_spans(instance: dg.DagsterInstance, run_id: str) -> dict[str, tuple[float, float]]:
    """Each step's start and end (its first STEP_START to its last success or failure)."""
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or event.step_key is None:
            continue
        if event.event_type == dg.DagsterEventType.STEP_START:
            starts.setdefault(event.step_key, entry.timestamp)
        elif event.event_type in (
            dg.DagsterEventType.STEP_SUCCESS,
            dg.DagsterEventType.STEP_FAILURE,
        ):
            ends[event.step_key] = entry.timestamp
    return {key: (starts[key], ends[key]) for key in starts if key in ends}


def test_the_run_executes_independent_steps_at_the_same_time(pipeline):
    # MEDALLION_MAX_WORKERS=2: steps overlap, at most two at a time across every run of the
    # medallion run (the days of the daily tables run beside the rest, on shared worker slots);
    # the gold tables built this way equal the independent computation
    # (test_gold_table_equals_the_independent_computation).
    catalog = pipeline["catalog"]
    spans = []  # (start, end, table, the run's partition)
    for run_id in pipeline["first"].run_ids:
        run = pipeline["instance"].get_run_by_id(run_id)
        for key, (start, end) in step_spans(pipeline["instance"], run_id).items():
            spans.append((start, end, step_table(key), run.tags.get("dagster/partition")))
    most = 0
    for start, *_ in spans:  # how many steps were running as each one started
        most = max(most, sum(1 for s, e, *_ in spans if s <= start < e))
    assert most == 2
    daily = [(s, e) for s, e, _t, day in spans if day is not None]
    plain = [(s, e) for s, e, _t, day in spans if day is None]
    assert any(s < e2 and s2 < e for s, e in daily for s2, e2 in plain), "days ran beside"
    # a table reading a daily table starts once every day of it is done
    readers = [t for t in catalog.datasets if "silver.user_events" in catalog.datasets[t].upstream]
    assert readers
    for start, _end, table, _day in spans:
        if table in readers and catalog.datasets[table].settings.partitions is None:
            assert start >= max(e for _s, e in daily), table


# Every gold table has an independent computation in tests/e2e/reference.py.
GOLD_TABLES = (
    "gold.revenue_by_region",
    "gold.customer_ltv",
    "gold.daily_user_events",
    "gold.shipping_dashboard_feed",
    "gold.fraud_features",
    "gold.late_shipments",
    "gold.product_sales",
)


@pytest.mark.parametrize("table", GOLD_TABLES)
def test_gold_table_equals_the_independent_computation(pipeline, table):
    assert table in pipeline["catalog"].datasets
    assert lake_rows(pipeline, table) == reference_rows(pipeline, table)


def test_pyiceberg_reads_every_gold_table_as_spark_does_without_a_jvm(pipeline, spark):
    """Another engine reads the lake through its catalog: pyiceberg (no Spark, no JVM) gets the
    rows Spark reads, table by table, from the same catalog."""
    from pyiceberg.catalog import load_catalog as iceberg_catalog

    lake = Lake.local(pipeline["home"] / "lake")
    other = iceberg_catalog("lake", **lake.catalog.pyiceberg_properties())
    for table in GOLD_TABLES:
        by_pyiceberg = other.load_table(table).scan().to_arrow().to_pylist()
        by_spark = [r.asDict() for r in lake.read_current(spark, table).collect()]
        assert by_pyiceberg, table
        assert reference.normalise([tuple(r.values()) for r in by_pyiceberg]) == (
            reference.normalise([tuple(r.values()) for r in by_spark])
        ), table


def test_the_types_lineage_derives_are_the_types_spark_wrote(pipeline, spark):
    """Every column whose type the lineage derives through the SQL (declared, cast, or what a
    function returns) has that type in the lake, as Spark wrote it; a computed decimal is a
    decimal of Spark's own precision."""
    lake = Lake.local(pipeline["home"] / "lake")
    compared = 0
    for name, dataset in pipeline["catalog"].datasets.items():
        frame = lake.read_current(spark, name)
        if frame is None:
            continue
        written = {f.name: f.dataType.simpleString() for f in frame.schema}
        for column in dataset.columns:
            derived = (column.type or "unknown").replace(" ", "")
            if derived == "unknown" or column.column not in written:
                continue
            actual = written[column.column].replace(" ", "")
            same = actual == derived or (derived == "decimal" and actual.startswith("decimal("))
            assert same, (name, column.column, derived, actual)
            compared += 1
    assert compared >= 200, compared


def test_every_gold_table_of_the_catalog_is_compared():
    compared = set(GOLD_TABLES)
    catalog = load_catalog(Path(__file__).parents[2], use_cache=False)
    assert {n for n in catalog.datasets if n.startswith("gold.")} == compared


def test_malformed_records_are_quarantined_with_counts(pipeline):
    by_table = {}
    for result in pipeline["first"].results:
        if result.quarantined is not None:
            by_table[result.table] = by_table.get(result.table, 0) + result.quarantined
    for name, count in pipeline["malformed"].items():
        assert by_table[f"bronze.{name}"] == count, name
    assert sum(pipeline["malformed"].values()) > 0


def test_gold_tables_with_a_target_are_in_postgres_and_reconciled(pipeline):
    warehouse = PostgresWarehouse(pipeline["dsn"])
    try:
        for name, dataset in pipeline["catalog"].datasets.items():
            if dataset.target is None:
                continue
            lake = sum(r.rows for r in pipeline["first"].results if r.table == name)
            rows = warehouse.row_count(dataset.target.warehouse_table)
            if dataset.target.mode == "append":
                assert rows == lake, name  # each day appended once
            else:
                assert rows == len(lake_rows(pipeline, name)), name
    finally:
        warehouse.close()


def test_a_second_run_skips_everything_changes_no_gold_row_and_says_so(pipeline, monkeypatch):
    gold = {t: lake_rows(pipeline, t) for t in pipeline["catalog"].datasets if t.startswith("gold")}
    opened = []  # the steps that opened a Spark session: none has anything to read
    step_session = resources.step_session
    monkeypatch.setattr(
        resources, "step_session", lambda *a: opened.append(a[2]) or step_session(*a)
    )
    said: list[str] = []
    second = run_project(pipeline["root"], log=said.append, instance=pipeline["instance"])
    assert second.success
    assert opened == []  # its freshness judged again from the newest value recorded
    assert all(r.skipped for r in second.results), [
        r.table for r in second.results if not r.skipped
    ]
    assert {t: lake_rows(pipeline, t) for t in gold} == gold
    test_gold_tables_with_a_target_are_in_postgres_and_reconciled(pipeline)  # nothing reloaded
    for table, rows in gold.items():
        assert len(rows) == len(set(rows)) or table == "gold.late_shipments", table
    # Found before any step: no Dagster run was launched for nothing.
    assert second.run_ids == []
    assert any(m.startswith("nothing new: ") and "no step ran" in m for m in said), said


def warehouse_days(pipeline) -> tuple[dict[str, int], int]:
    """(rows per day of analytics.daily_user_events, key values held more than once)."""
    warehouse = PostgresWarehouse(pipeline["dsn"])
    try:
        rows = warehouse.read("analytics.daily_user_events").to_pylist()
    finally:
        warehouse.close()
    days: dict[str, int] = {}
    for row in rows:
        days[str(row["event_date"])] = days.get(str(row["event_date"]), 0) + 1
    keys = [(r["event_date"], r["event_type"], r["device_type"], r["country_code"]) for r in rows]
    return days, len(keys) - len(set(keys))


def lake_days(pipeline) -> dict[str, int]:
    lake = Lake.local(pipeline["home"] / "lake")
    table = "gold.daily_user_events"
    return {day: lake.current(table, day).rows for day in lake.partitions(table)}


def test_reruns_backfills_and_a_new_version_of_a_day_keep_the_warehouse_exact(pipeline):
    """The daily gold table is loaded with mode append: each day's rows exactly once, whatever
    reruns, and a new version of a day replaces that day's rows only."""
    assert warehouse_days(pipeline) == (lake_days(pipeline), 0)
    days = sorted(lake_days(pipeline))

    # A backfill over both loaded days, as the UI launches it: one run over the range.
    defs = definitions_for(pipeline["catalog"], DatasetTranslator(pipeline["catalog"]))
    job = defs.resolve_implicit_global_asset_job_def()
    daily = [dg.AssetKey(t.split(".")) for t, d in pipeline["catalog"].datasets.items() if (
        d.settings.partitions is not None
    )]  # fmt: skip
    backfill = job.execute_in_process(
        asset_selection=daily,
        instance=pipeline["instance"],
        tags={
            "dagster/asset_partition_range_start": days[0],
            "dagster/asset_partition_range_end": days[-1],
        },
    )
    assert backfill.success
    assert warehouse_days(pipeline) == (lake_days(pipeline), 0)

    # Late events of the second day arrive: that day gets a new version, the first stays.
    client = boto3.client("s3", endpoint_url=pipeline["s3"], region_name="us-east-1")
    source = pipeline["catalog"].sources["user_events"]
    late = [
        json.dumps({**event, "event_id": f"late-{i}", "event_type": "late_visit"})
        for i, event in enumerate(generated_events(client, source, days[-1])[:25])
    ]
    client.put_object(
        Bucket=source.bucket,
        Key=f"{source.prefix}dt={days[-1]}/late.jsonl",
        Body="\n".join(late).encode(),
    )
    source_table = "bronze.user_events"
    before = lake_days(pipeline)
    third = run_project(pipeline["root"], log=lambda _m: None, instance=pipeline["instance"])

    assert third.success
    # The day's bronze appended the late object: the run wrote its 25 rows, not the day's.
    (bronze,) = [r for r in third.results if (r.table, r.partition) == (source_table, days[-1])]
    assert bronze.status == "built" and bronze.rows == 25 < (bronze.current_rows or 0)
    after = lake_days(pipeline)
    assert after[days[0]] == before[days[0]] and after[days[-1]] > before[days[-1]]
    assert warehouse_days(pipeline) == (after, 0)


def generated_events(client, source, day: str) -> list[dict]:
    """The well-formed events the demo generator wrote for ``day``."""
    listing = client.list_objects_v2(Bucket=source.bucket, Prefix=f"{source.prefix}dt={day}/")
    events = []
    for item in listing.get("Contents", []):
        body = client.get_object(Bucket=source.bucket, Key=item["Key"])["Body"].read()
        for line in body.decode().splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and event.get("event_id"):
                    events.append(event)
    return events


# --- OpenLineage: the first run's events, as the receiver got them ------------------------------


def test_every_step_sends_start_then_complete_openlineage_events(pipeline):
    first, catalog = pipeline["first"], pipeline["catalog"]
    assert pipeline["receiver"].paths == {"/api/v1/lineage"}
    for event in pipeline["events"]:
        check_event(event)
    steps = {}
    for events in lineage_runs(pipeline["events"]).values():
        assert [e["eventType"] for e in events] == ["START", "COMPLETE"], events
        start, complete = events
        assert start["eventTime"] <= complete["eventTime"]
        facets = complete["run"]["facets"]
        assert facets["parent"]["run"]["runId"] in first.run_ids
        assert facets["parent"]["job"]["namespace"] == "theworldshop"
        table = complete["job"]["name"]
        assert complete["job"]["namespace"] == "theworldshop"
        steps[(table, facets["medallion"].get("partition"))] = complete
    assert set(steps) == {(r.table, r.partition) for r in first.results}

    lake = Lake.local(pipeline["home"] / "lake")
    for result in first.results:
        complete = steps[(result.table, result.partition)]
        dataset = catalog.datasets[result.table]
        if dataset.layer != "bronze":
            assert complete["job"]["facets"]["sql"]["query"] == dataset.sql
        version = pipeline["first_versions"][(result.table, result.partition)]
        output = complete["outputs"][0]
        assert output["namespace"] == "file"
        lake_dir = pipeline["home"] / "lake" / result.table.replace(".", "/")
        assert output["name"] == str(lake_dir.resolve())
        assert output["facets"]["version"]["datasetVersion"] == version.version_id
        stats = output["outputFacets"]["outputStatistics"]
        assert stats["rowCount"] == version.rows == result.current_rows
        assert stats["size"] > 0 and stats["fileCount"] >= 1
        columns = [f["name"] for f in output["facets"]["schema"]["fields"]]
        assert columns == list(read_table(result.table, lake_root=lake.root).columns)
        assertions = output["facets"]["dataQualityAssertions"]["assertions"]
        assert [(a["name"], a["success"]) for a in assertions] == [
            (c.name, c.passed) for c in result.checks
        ]
        # the inputs it was built from, at the versions it read
        read = {i["name"]: i["facets"]["version"]["datasetVersion"] for i in complete["inputs"]}
        assert sorted(read.values()) == sorted(version.inputs.values())
        if dataset.target is not None:
            (warehouse,) = complete["outputs"][1:]
            assert warehouse["namespace"].startswith("postgres://127.0.0.1:")
            assert warehouse["name"] == f"postgres.{dataset.target.warehouse_table}"


def test_the_events_column_lineage_is_medallion_lineages(pipeline):
    from click.testing import CliRunner

    from medallion_assets.cli import cli
    from medallion_assets.openlineage.events import Naming, column_edges, node_names

    root, catalog = pipeline["root"], pipeline["catalog"]
    names = node_names(catalog, Naming("theworldshop", pipeline["home"] / "lake"))
    compared = 0
    for events in lineage_runs(pipeline["events"]).values():
        complete = events[-1]
        table = complete["job"]["name"]
        args = ["lineage", table, "--upstream", "--depth", "1", "--columns", "--format", "json"]
        shown = CliRunner().invoke(cli, [*args, "--project", str(root)])
        assert shown.exit_code == 0, shown.output
        expected = {
            (e["from"], e["to"], e["transform"])
            for e in json.loads(shown.output)["column_edges"]
            if e["to"].startswith(f"{table}.")
        }
        for output in complete["outputs"]:  # the lake table's, and the warehouse table's
            found = column_edges(output["facets"]["columnLineage"], names, table)
            assert found == expected, table
        compared += 1
    assert compared == len(pipeline["first"].results)


def test_after_a_landing_the_merge_tables_merge_the_touched_orders_and_gold_stays_exact(pipeline):
    """A new orders object lands: re-exports of orders already in the lake (a status change)
    and new orders. The demo's merge tables recompute only the orders it touched, one table
    asked for in full is built in full, each says how in the run summary, and every gold
    table still equals the independent computation over the raw data."""
    client = boto3.client("s3", endpoint_url=pipeline["s3"], region_name="us-east-1")
    source = pipeline["catalog"].sources["orders"]
    listing = client.list_objects_v2(Bucket=source.bucket, Prefix=source.prefix)
    first = listing["Contents"][0]["Key"]
    body = client.get_object(Bucket=source.bucket, Key=first)["Body"].read().decode()
    orders = [o for o in map(_record, body.splitlines()) if isinstance(o.get("order_id"), int)]
    orders = list({o["order_id"]: o for o in orders}.values())[:6]  # six orders, once each
    top = max(int(o["order_id"]) for o in orders) + 10_000_000
    landed = [{**o, "status": "returned", "updated_at": "2030-01-01T00:00:00"} for o in orders[:3]]
    landed += [{**o, "order_id": top + i} for i, o in enumerate(orders[3:])]
    client.put_object(
        Bucket=source.bucket,
        Key=f"{source.prefix}landed-late.jsonl",
        Body="\n".join(json.dumps(o) for o in landed).encode(),
    )

    run = run_project(
        pipeline["root"],
        log=lambda _m: None,
        instance=pipeline["instance"],
        full_refresh="silver.order_items",
    )

    assert run.success, [(r.label, r.message) for r in run.having("failed")]
    by_table = {r.label: r for r in run.results}
    merged = by_table["silver.orders_usd"]
    assert merged.built.startswith("merged 6 recomputed rows over the keys bronze.orders"), merged
    assert merged.rows == 6 < (merged.current_rows or 0)
    # It reads the orders again for their clickstream window, joined back on order_id.
    fraud = by_table["gold.fraud_features"]
    assert fraud.built.startswith("merged 6 recomputed rows over the keys silver.orders_usd"), fraud
    refreshed = by_table["silver.order_items"]
    assert refreshed.built == "in full: a full refresh was asked for", refreshed
    assert refreshed.rows == refreshed.current_rows
    section = incremental(run)
    assert "  silver.orders_usd: merged 6 recomputed rows" in section
    # order_items reads bronze.orders; only its referential-integrity rule reads orders_usd:
    # its step started beside orders_usd's, and the rule read orders_usd as this run left it
    # (its three new orders are in it).
    spans = {k: v for i in run.run_ids for k, v in step_spans(pipeline["instance"], i).items()}
    assert spans["silver__order_items"][0] < spans["silver__orders_usd"][1]
    checked = {c.name: c for c in refreshed.checks}
    integrity = checked["referential_integrity_order_id"]
    assert integrity.passed and integrity.failing_rows == 0, integrity
    assert "  silver.order_items: in full: a full refresh was asked for" in section
    expected, _malformed = reference.compute(pipeline["catalog"], client)
    for table in GOLD_TABLES:
        assert lake_rows(pipeline, table) == reference.normalise(
            expected.execute(f"SELECT * FROM {table}").fetchall()
        ), table
    # The warehouse took only the changed rows of fraud_features (the three new orders: the
    # re-exported three's features are what they were), and holds what the lake does.
    loaded = pipeline["instance"].get_latest_materialization_event(
        dg.AssetKey(["gold", "fraud_features"])
    )
    metadata = loaded.asset_materialization.metadata
    assert metadata["warehouse_loaded"].value == "changed keys", metadata
    assert metadata["warehouse_changed_keys"].value == 3 == metadata["warehouse_rows_loaded"].value
    warehouse = PostgresWarehouse(pipeline["dsn"])
    try:
        for table in ("gold.fraud_features", "gold.customer_ltv", "gold.product_sales"):
            held = warehouse.read(pipeline["catalog"].datasets[table].target.warehouse_table)
            rows = [tuple(r.values()) for r in held.to_pylist()]
            assert reference.normalise(rows) == lake_rows(pipeline, table), table
    finally:
        warehouse.close()


def _record(line: str) -> dict:
    """A JSON-lines record, or {} for a malformed line (the demo writes some)."""
    try:
        record = json.loads(line)
    except ValueError:
        return {}
    return record if isinstance(record, dict) else {}


def test_the_readme_tour_works_as_written_on_the_demo_that_ran(pipeline):
    """Last in this file: it adds a table and edits the project's rules."""
    import os

    env = {**os.environ, "MEDALLION_SPARK_SHUFFLE_PARTITIONS": "2"}
    env["DAGSTER_HOME"] = str(pipeline["instance"].root_directory)
    follow_the_tour(pipeline["root"], env)
