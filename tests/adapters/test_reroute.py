"""Rerouting inside real Dagster steps on Spark: a source bucket that does not exist on a real
S3 API (moto's server) marks the source down and sends bronze to the source's replica, an
upstream that was never published sends silver to its alternate producer, and a table two hops
below a down source with no replica recovers through its cheapest path; the route is recorded
in the control store, sticks for later runs, stops when no route is left, and goes back when an
operator marks the source up."""

from __future__ import annotations

import uuid

import dagster as dg
import pytest
from click.testing import CliRunner

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.run_summary import RunSummary, results_of_run
from medallion_assets.adapters.translator import DatasetTranslator, table_key
from medallion_assets.catalog import load_catalog
from medallion_assets.cli import cli
from medallion_assets.control_plane import ControlPlane
from medallion_assets.io.s3_store import Boto3ObjectStore
from medallion_assets.lake import Lake
from medallion_assets.recovery.recover import DownNodes
from tests.adapters.minimal import minimal_project, orders

pytestmark = pytest.mark.slow

POLICIES = """
retry_policies:
  quick: {max_retries: 1, delay_seconds: 0.1, backoff: fixed}
default_retry_policy: quick
healing_rules:
  - name: source_unavailable
    match: {message: "NoSuchBucket"}
    error_code: SOURCE_UNAVAILABLE
    then: reroute
  - name: upstream_missing
    match: {exception: MissingInput}
    error_code: UPSTREAM_MISSING
    actions: [reroute_source]
    then: reroute
"""


def job_of(root):
    catalog = load_catalog(root, use_cache=False)
    return definitions_for(
        catalog, DatasetTranslator(catalog)
    ).resolve_implicit_global_asset_job_def()


def entries(plane, table: str, run_id: str) -> list[tuple[str, str]]:
    return [(e.kind, e.message) for e in plane.store().audit([f"dataset:{table}"], run_id=run_id)]


@pytest.fixture
def on_s3(tmp_path, monkeypatch, s3_server):
    """The minimal project reading orders from moto: the primary bucket is never created, the
    replica (another system, another prefix) holds the objects."""
    root, _local = minimal_project(tmp_path, monkeypatch, {"order_id": 1, "amount": 5})
    for name, value in {
        "MEDALLION_S3_ENDPOINT": s3_server.endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    suffix = uuid.uuid4().hex[:8]
    primary, replica = f"orders-{suffix}", f"orders-replica-{suffix}"
    sources = root / "metadata" / "sources.yaml"
    sources.write_text(
        sources.read_text().replace("bucket: minimal-raw", f"bucket: {primary}")
        + "    replicas:\n"
        + f"      - {{name: orders_replica, system: s3_replica, bucket: {replica}, "
        + "prefix: copy/orders/, cost: 2}\n"
    )
    systems = root / "metadata" / "systems.yaml"
    systems.write_text(
        systems.read_text()
        + "  s3_replica: {kind: s3, throttle: {max_concurrent_jobs: 1, requests_per_second: 20}}\n"
    )
    (root / "metadata" / "policies.yaml").write_text(POLICIES)
    store = Boto3ObjectStore(s3_server.endpoint_url)
    store.ensure_bucket(replica)
    store.put(replica, "copy/orders/a.jsonl", orders({"order_id": 1, "amount": 5, "country": "de"}))
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    return root, store, primary, replica, plane


def test_an_unreachable_source_bucket_is_rerouted_to_its_replica_until_routed_back(spark, on_s3):
    root, store, primary, replica, plane = on_s3
    job, lake = job_of(root), Lake.local(root / ".medallion" / "lake")
    instance = dg.DagsterInstance.ephemeral()
    bronze = [table_key("bronze.orders")]

    first = job.execute_in_process(asset_selection=bronze, instance=instance)
    assert first.success
    rows = lake.read(spark, [lake.current("bronze.orders")]).collect()
    assert [(r.order_id, r._source_file) for r in rows] == [
        (1, f"s3://{replica}/copy/orders/a.jsonl")
    ]
    route = plane.store().routes()["bronze.orders"]
    assert (route.route, route.changed_by, route.run_id) == (
        "orders_replica",
        "recovery",
        first.run_id,
    )
    assert DownNodes(plane.store()).all()["source:orders"].changed_by == "healing"
    kinds = [k for k, _ in entries(plane, "bronze.orders", first.run_id)]
    assert kinds == ["attempt", "error", "route", "healing", "retry", "attempt", "outcome"]
    log = dict(entries(plane, "bronze.orders", first.run_id)[1:4])
    assert "SOURCE_UNAVAILABLE" in log["error"] and "NoSuchBucket" in log["error"]
    assert "from primary to orders_replica (replica, cost 2)" in log["healing"]

    # The route sticks: the next run reads the replica at once, and only the new object.
    store.put(replica, "copy/orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "fr"}))
    second = job.execute_in_process(asset_selection=bronze, instance=instance)
    assert second.success
    assert [k for k, _ in entries(plane, "bronze.orders", second.run_id)] == ["attempt", "outcome"]
    assert "along route orders_replica" in entries(plane, "bronze.orders", second.run_id)[0][1]
    materialization = second.asset_materializations_for_node("bronze__orders")[0]
    assert materialization.metadata["new_objects"].value == 1
    assert "orders_replica" in materialization.metadata["route"].value
    assert lake.current("bronze.orders").rows == 2

    # The primary comes back with the same objects; an operator marks the source up, and the
    # table goes back to it. The manifest is keyed by the primary's keys: nothing is ingested
    # twice.
    store.ensure_bucket(primary)
    store.put(primary, "orders/a.jsonl", orders({"order_id": 1, "amount": 5, "country": "de"}))
    store.put(primary, "orders/b.jsonl", orders({"order_id": 2, "amount": 7, "country": "fr"}))
    back = CliRunner().invoke(
        cli,
        ["control", "up", "source:orders", "--reason", "eu-west-1 is back", "--project", str(root)],
    )
    assert back.exit_code == 0, back.output
    assert "bronze.orders: orders_replica -> primary" in back.output
    assert "bronze.orders" not in plane.store().routes()
    third = job.execute_in_process(asset_selection=bronze, instance=instance)
    assert third.success
    meta = third.asset_materializations_for_node("bronze__orders")[0].metadata
    assert "route" not in meta
    assert meta["skipped"].value is True  # same objects, same ETags: the version is reused
    assert lake.current("bronze.orders").rows == 2


def test_a_broken_replica_with_no_route_left_fails_fast_and_says_so(spark, on_s3):
    root, store, _primary, replica, plane = on_s3
    marked = CliRunner().invoke(
        cli,
        ["control", "down", "source:orders", "--reason", "primary down", "--project", str(root)],
    )
    assert "rerouted bronze.orders: primary -> orders_replica" in marked.output, marked.output
    store._client.delete_object(Bucket=replica, Key="copy/orders/a.jsonl")
    store._client.delete_bucket(Bucket=replica)

    result = job_of(root).execute_in_process(
        asset_selection=[table_key("bronze.orders")],
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    assert not result.success
    failure = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert len(failure) == 1
    assert (
        "no replica or alternate is left to reroute to"
        in failure[0].event_specific_data.error.message
    )
    assert not [e for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY"]
    kinds = [k for k, _ in entries(plane, "bronze.orders", result.run_id)]
    assert kinds == ["attempt", "error", "healing", "outcome"]
    assert plane.store().routes()["bronze.orders"].route == "orders_replica"  # unchanged


ALTERNATE = (
    "SELECT order_id, amount, upper(country) AS country FROM bronze.orders_backup "
    "WHERE amount >= 0\n"
)


def test_a_missing_upstream_reroutes_to_the_alternate_producer(spark, tmp_path, monkeypatch):
    root, local = minimal_project(tmp_path, monkeypatch, {"order_id": 1, "amount": 5})
    sources = root / "metadata" / "sources.yaml"
    backup_source = (
        sources.read_text().split("sources:\n", 1)[1].replace("orders:", "orders_backup:", 1)
    )
    sources.write_text(
        sources.read_text() + backup_source.replace("prefix: orders/", "prefix: backup/")
    )
    (root / "sql" / "bronze" / "orders_backup.sql").write_text(
        "SELECT order_id, amount, country, _ingested_at, _source_file, _batch_id "
        "FROM raw.orders_backup\n"
    )
    (root / "sql" / "alternates" / "silver").mkdir(parents=True)
    (root / "sql" / "alternates" / "silver" / "orders_from_backup.sql").write_text(ALTERNATE)
    datasets = root / "metadata" / "datasets.yaml"
    datasets.write_text(
        datasets.read_text()
        + "    alternates:\n"
        + "      - {name: from_backup, sql: alternates/silver/orders_from_backup.sql, cost: 4}\n"
    )
    (root / "metadata" / "policies.yaml").write_text(POLICIES)
    local.put(
        "minimal-raw", "backup/a.jsonl", orders({"order_id": 9, "amount": 3, "country": "gb"})
    )
    job, lake = job_of(root), Lake.local(root / ".medallion" / "lake")
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(root / ".medallion")}, root)
    instance = dg.DagsterInstance.ephemeral()
    assert job.execute_in_process(
        asset_selection=[table_key("bronze.orders_backup")], instance=instance
    ).success

    # bronze.orders was never published: silver cannot read it, and reroutes.
    result = job.execute_in_process(
        asset_selection=[table_key("silver.orders_clean")], instance=instance
    )
    assert result.success
    version = lake.current("silver.orders_clean")
    rows = lake.read(spark, [version]).collect()
    assert [(r.order_id, r.country) for r in rows] == [(9, "GB")]
    assert version.inputs == {
        "bronze.orders_backup": lake.current("bronze.orders_backup").version_id
    }
    catalog = load_catalog(root, use_cache=False)
    assert version.code_version != catalog.datasets["silver.orders_clean"].code_version
    meta = result.asset_materializations_for_node("silver__orders_clean")[0].metadata
    assert meta["route"].value.startswith("from_backup (alternate, cost 4)")
    log = entries(plane, "silver.orders_clean", result.run_id)
    assert [k for k, _ in log] == [
        "attempt",
        "error",
        "route",
        "healing",
        "retry",
        "attempt",
        "outcome",
    ]
    assert "UPSTREAM_MISSING" in log[1][1] and "bronze.orders has no published version" in log[1][1]


def test_a_table_two_hops_below_a_down_source_recovers_through_its_cheapest_path(spark, on_s3):
    """orders' bucket does not exist and has no replica here; silver.orders_clean (two hops
    below) has two alternates, over a backup feed at cost 4 and at cost 9; gold reads silver."""
    root, store, primary, _replica, plane = on_s3
    backup_bucket = f"orders-backup-{uuid.uuid4().hex[:8]}"
    columns = (
        "    columns:\n"
        "      - {name: order_id, type: bigint, nullable: false}\n"
        '      - {name: amount, type: "decimal(18,2)"}\n'
        "      - {name: country, type: string}\n"
    )
    (root / "metadata" / "sources.yaml").write_text(  # orders: no replica this time
        "sources:\n"
        f"  orders:\n    system: s3_raw\n    bucket: {primary}\n    prefix: orders/\n"
        f"    format: jsonl\n{columns}"
        f"  orders_backup:\n    system: s3_replica\n    bucket: {backup_bucket}\n"
        f"    prefix: backup/\n    format: jsonl\n{columns}"
    )
    (root / "sql" / "bronze" / "orders_backup.sql").write_text(
        "SELECT order_id, amount, country, _ingested_at, _source_file, _batch_id "
        "FROM raw.orders_backup\n"
    )
    alternates = root / "sql" / "alternates" / "silver"
    alternates.mkdir(parents=True)
    (alternates / "orders_from_backup.sql").write_text(ALTERNATE)
    (alternates / "orders_costly.sql").write_text(ALTERNATE.replace(">= 0", ">= 4"))
    datasets = root / "metadata" / "datasets.yaml"
    datasets.write_text(
        datasets.read_text()
        + "    alternates:\n"
        + "      - {name: costly, sql: alternates/silver/orders_costly.sql, cost: 9}\n"
        + "      - {name: from_backup, sql: alternates/silver/orders_from_backup.sql, cost: 4}\n"
    )
    store.ensure_bucket(backup_bucket)
    store.put(
        backup_bucket,
        "backup/a.jsonl",
        orders(
            {"order_id": 7, "amount": 3, "country": "gb"},
            {"order_id": 8, "amount": 5, "country": "gb"},
        ),
    )
    job, lake = job_of(root), Lake.local(root / ".medallion" / "lake")
    instance = dg.DagsterInstance.ephemeral()

    # The first run finds the bucket gone: the source is marked down and silver, two hops
    # below, moves to its cheapest alternate at once; bronze.orders fails (nothing produces it).
    first = job.execute_in_process(instance=instance, raise_on_error=False)
    assert not first.success
    assert "source:orders" in DownNodes(plane.store()).all()
    route = plane.store().routes()["silver.orders_clean"]
    assert (route.route, route.changed_by) == ("from_backup", "recovery")
    (entry,) = [
        e
        for e in plane.store().audit(["dataset:silver.orders_clean"], run_id=first.run_id)
        if e.kind == "route"
    ]
    assert entry.details["around"] == ["source:orders"] and entry.details["cost"] == 5
    assert entry.details["path_routes"] == {
        "bronze.orders_backup": "primary",
        "silver.orders_clean": "from_backup",
    }
    assert "bronze.orders" not in plane.store().routes()

    # The next run goes around it: bronze.orders is left out (its version, if any, stays), and
    # silver and gold build from the backup feed on Spark.
    second = job.execute_in_process(instance=instance)
    assert second.success
    left_out = second.asset_materializations_for_node("bronze__orders")[0].metadata
    assert "source:orders down" in left_out["unavailable"].value
    # Never "unchanged": it was not built, and it has no version (a run exits 1 for it).
    summary = RunSummary(results_of_run(second, ["bronze.orders"], None, {}))
    (result,) = [r for r in summary.results if r.table == "bronze.orders"]
    assert (result.status, result.published) == ("not built", False)
    assert summary.missing == [result] and not summary.nothing_changed
    rows = lake.read(spark, [lake.current("gold.revenue")]).collect()
    assert [(r.country, float(r.revenue)) for r in rows] == [("GB", 8.0)]
    assert lake.current("silver.orders_clean").inputs == {
        "bronze.orders_backup": lake.current("bronze.orders_backup").version_id
    }


def test_a_table_recovers_from_its_backup_read_as_published(spark, tmp_path, monkeypatch):
    """silver.orders_clean is backed up by a snapshot table built from it; with its source
    marked down, silver is read back from the snapshot's published version on Spark."""
    root, local = minimal_project(tmp_path, monkeypatch, {"order_id": 1, "amount": 5})
    (root / "sql" / "silver" / "orders_snapshot.sql").write_text(
        "SELECT order_id, amount, country FROM silver.orders_clean\n"
    )
    datasets = root / "metadata" / "datasets.yaml"
    datasets.write_text(
        datasets.read_text() + "    backups: [{table: silver.orders_snapshot, cost: 2}]\n"
    )
    job, lake = job_of(root), Lake.local(root / ".medallion" / "lake")
    instance = dg.DagsterInstance.ephemeral()
    assert job.execute_in_process(instance=instance).success
    snapshot = lake.current("silver.orders_snapshot")

    marked = CliRunner().invoke(
        cli, ["control", "down", "source:orders", "--reason", "feed broken", "--project", str(root)]
    )
    assert "silver.orders_clean: primary -> backup_silver_orders_snapshot" in marked.output
    local.put("minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 9}))  # unread
    result = job.execute_in_process(
        instance=instance,
        asset_selection=[table_key("silver.orders_clean"), table_key("gold.revenue")],
    )
    assert result.success
    version = lake.current("silver.orders_clean")
    assert version.inputs == {"silver.orders_snapshot": snapshot.version_id}
    rows = lake.read(spark, [version]).collect()
    assert [(r.order_id, float(r.amount)) for r in rows] == [(1, 5.0)]
    meta = result.asset_materializations_for_node("silver__orders_clean")[0].metadata
    assert meta["route"].value.startswith("backup_silver_orders_snapshot (backup, cost 2)")
