"""Bronze ingest and silver/gold builds on a real local Spark session, over the minimal project
with a local folder standing in for S3."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from medallion_assets.catalog import load_catalog
from medallion_assets.checks.results import ChecksFailed
from medallion_assets.control.store import ControlStore
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.lake import Lake
from medallion_assets.lake import tables as lake_tables
from medallion_assets.lineage import spark_sql as spark_sql_module
from medallion_assets.lineage import statement as statement_module
from medallion_assets.lineage.statement import parse_script
from medallion_assets.runtime import table_build as table_build_module
from medallion_assets.runtime.ingest.bronze_ingest import ingest
from medallion_assets.runtime.ingest.raw_read import RawRecords
from medallion_assets.runtime.reuse import MissingInput
from medallion_assets.runtime.table_build import build_table
from medallion_assets.runtime.table_run import RunLog, TableRun
from medallion_assets.testing import read_table

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"

pytestmark = pytest.mark.slow


def orders(*rows: dict[str, object], broken: int = 0) -> bytes:
    lines = [json.dumps(r) for r in rows] + ["{not json"] * broken
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def project(tmp_path: Path):
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    catalog = load_catalog(root, use_cache=False)
    store = LocalFolderObjectStore(tmp_path / "s3")
    store.ensure_bucket("minimal-raw")
    lake = Lake.local(tmp_path / "lake")
    return catalog, store, lake


def run_bronze(spark, project, run_id="r1"):
    catalog, store, lake = project
    return ingest(bronze_run(spark, catalog, lake, run_id=run_id), store)


def bronze_run(spark, catalog, lake: Lake, **more) -> TableRun:
    """The run of bronze.orders, with its manifest in the control store beside the lake."""
    dataset = catalog.datasets["bronze.orders"]
    control = control_store(lake)
    return table_run(spark, lake, catalog, dataset, control=control, **more)


def table_run(spark, lake: Lake, catalog, dataset, **more) -> TableRun:
    return TableRun(spark=spark, lake=lake, catalog=catalog, dataset=dataset, **more)


def control_store(lake: Lake) -> ControlStore:
    """The control store beside the lake (ingest keeps its manifests there)."""
    return ControlStore.open(f"sqlite:///{lake.root.parent / 'control.db'}")


def test_bronze_quarantines_malformed_records_and_adds_ingestion_columns(
    spark, project, monkeypatch
):
    _, store, lake = project
    store.put(
        "minimal-raw",
        "orders/a.jsonl",
        orders(
            {"order_id": 1, "amount": 10.5, "country": "DE"},
            {"order_id": 2, "amount": "not a number", "country": "FR"},
            broken=1,
        ),
    )
    released = []
    release = RawRecords.release

    def spied(records: RawRecords) -> None:
        release(records)
        released.append(records.held is not None and records.held.is_cached)

    monkeypatch.setattr(RawRecords, "release", spied)
    outcome = run_bronze(spark, project)
    assert (outcome.new_objects, outcome.quarantined, outcome.total_records) == (1, 2, 3)
    assert released == [False]  # the raw records it cached are dropped once written
    bronze = read_table("bronze.orders", lake_root=lake.root)
    assert bronze["order_id"].tolist() == [1]
    assert bronze["_source_file"].tolist() == ["s3://minimal-raw/orders/a.jsonl"]
    assert bronze["_batch_id"].tolist() == ["r1"]
    assert bronze["_ingested_at"].notna().all()
    quarantine = read_table("bronze.orders__quarantine", lake_root=lake.root)
    assert sorted(quarantine["_corrupt_record"].str[:5]) == ['{"ord', "{not "]


def test_reingesting_the_same_files_adds_nothing_and_is_skipped(spark, project):
    _, store, lake = project
    store.put(
        "minimal-raw", "orders/a.jsonl", orders({"order_id": 1, "amount": 1, "country": "DE"})
    )
    first = run_bronze(spark, project, "r1")
    second = run_bronze(spark, project, "r2")
    assert not first.build.skipped and second.build.skipped
    assert "no new objects" in second.build.reason
    assert second.build.version == first.build.version
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 2, "country": "FR"})
    )
    third = run_bronze(spark, project, "r3")
    assert third.new_objects == 1
    bronze = read_table("bronze.orders", lake_root=lake.root).sort_values("order_id")
    assert bronze["order_id"].tolist() == [1, 2]
    assert bronze["_batch_id"].tolist() == ["r1", "r3"]  # each row keeps the batch that brought it


def test_a_replaced_object_replaces_its_rows(spark, project):
    _, store, lake = project
    store.put(
        "minimal-raw", "orders/a.jsonl", orders({"order_id": 1, "amount": 1, "country": "DE"})
    )
    run_bronze(spark, project, "r1")
    store.put(
        "minimal-raw", "orders/a.jsonl", orders({"order_id": 7, "amount": 1, "country": "DE"})
    )
    run_bronze(spark, project, "r2")
    assert read_table("bronze.orders", lake_root=lake.root)["order_id"].tolist() == [7]


def test_silver_and_gold_build_from_published_upstream_and_skip_when_unchanged(
    spark, project, monkeypatch
):
    catalog, store, lake = project
    store.put(
        "minimal-raw",
        "orders/a.jsonl",
        orders(
            {"order_id": 1, "amount": 10, "country": "de"},
            {"order_id": 2, "amount": 5, "country": "DE"},
            {"order_id": 3, "amount": -1, "country": "FR"},
        ),
    )
    run_bronze(spark, project)
    messages: list[str] = []
    # A build parses its SQL once: every parse of a build goes through parse_script.
    parses: list[str] = []

    def counted(sql, dialect, target, **options):
        parses.append(target)
        return parse_script(sql, dialect, target, **options)

    monkeypatch.setattr(statement_module, "parse_script", counted)
    monkeypatch.setattr(table_build_module, "parse_script", counted)
    monkeypatch.setattr(spark_sql_module, "parse_script", counted)
    silver = build_table(
        table_run(
            spark,
            lake,
            catalog,
            catalog.datasets["silver.orders_clean"],
            log=RunLog(messages.append),
        )
    )
    gold = build_table(table_run(spark, lake, catalog, catalog.datasets["gold.revenue"]))
    assert parses == ["silver.orders_clean", "gold.revenue"]
    assert (silver.version.rows, gold.version.rows) == (2, 1)
    revenue = read_table("gold.revenue", lake_root=lake.root)
    assert revenue.to_dict("records") == [{"country": "DE", "revenue": 15}]
    again = build_table(
        table_run(
            spark, lake, catalog, catalog.datasets["gold.revenue"], log=RunLog(messages.append)
        )
    )
    assert again.skipped and again.version == gold.version
    assert "code and inputs unchanged" in messages[-1]


def test_a_table_whose_upstream_was_never_published_fails_clearly(spark, project):
    catalog, _, lake = project
    with pytest.raises(MissingInput, match=r"bronze\.orders has no published version"):
        build_table(table_run(spark, lake, catalog, catalog.datasets["silver.orders_clean"]))


def published_then_new_order(spark, project, country: str):
    """silver.orders_clean published from order 1 (DE); then order 2 from ``country`` is
    ingested into bronze. Returns the dataset and the first build."""
    catalog, store, lake = project
    store.put(
        "minimal-raw", "orders/a.jsonl", orders({"order_id": 1, "amount": 1, "country": "DE"})
    )
    run_bronze(spark, project)
    dataset = catalog.datasets["silver.orders_clean"]
    first = build_table(table_run(spark, lake, catalog, dataset))
    store.put(
        "minimal-raw", "orders/b.jsonl", orders({"order_id": 2, "amount": 1, "country": country})
    )
    run_bronze(spark, project, "r2")
    return dataset, first


def test_a_failed_blocking_check_keeps_the_previous_version_current(spark, project):
    catalog, _, lake = project
    dataset, first = published_then_new_order(spark, project, "X")
    assert first.validation.passed and len(first.validation.results) == 3

    control = control_store(lake)
    with pytest.raises(ChecksFailed, match="accepted_values_country") as failed:
        build_table(table_run(spark, lake, catalog, dataset, control=control))
    assert f"version {first.version.version_id} stays current" in str(failed.value)
    assert lake.current("silver.orders_clean") == first.version
    assert read_table("silver.orders_clean", lake_root=lake.root)["order_id"].tolist() == [1]
    # The rejected output stays readable under its tag and the control store says why, for
    # whoever investigates.
    rejected = control.checks.of("silver.orders_clean", None, "rejected")
    assert rejected is not None and rejected.version == failed.value.staging
    assert [c["name"] for c in rejected.checks if not c["passed"]] == ["accepted_values_country"]
    kept = spark.sql(f"SELECT order_id FROM {failed.value.staging}").collect()
    assert sorted(r[0] for r in kept) == [1, 2]
    # The same code on the same inputs is not rebuilt only to be rejected again.
    with pytest.raises(ChecksFailed, match="accepted_values_country") as again:
        build_table(table_run(spark, lake, catalog, dataset, control=control))
    assert again.value.staging == failed.value.staging


def test_a_crash_between_staging_and_publish_leaves_the_previous_version_readable(spark, project):
    catalog, _, lake = project
    dataset, first = published_then_new_order(spark, project, "FR")

    class ProcessKilled(BaseException):
        pass

    def kill(*_args: object) -> None:
        raise ProcessKilled("killed between staging and publish")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lake_tables, "publish", kill)
        with pytest.raises(ProcessKilled):
            build_table(table_run(spark, lake, catalog, dataset))
    assert lake.current("silver.orders_clean") == first.version
    assert read_table("silver.orders_clean", lake_root=lake.root)["order_id"].tolist() == [1]
    assert (
        build_table(table_run(spark, lake, catalog, dataset)).version.rows == 2
    )  # the next run recovers


def test_sql_in_another_dialect_is_transpiled_to_spark(spark, project, tmp_path):
    catalog, store, lake = project
    root = catalog.root
    (root / "sql/gold/revenue.sql").write_text(
        "-- dialect: redshift\n"
        "SELECT country, SUM(NVL(amount, 0)) AS revenue, LEN(country) AS code_length\n"
        "FROM silver.orders_clean GROUP BY country\n"
    )
    catalog = load_catalog(root, use_cache=False)
    store.put(
        "minimal-raw", "orders/a.jsonl", orders({"order_id": 1, "amount": 4, "country": "DE"})
    )
    ingest(bronze_run(spark, catalog, lake), store)
    build_table(table_run(spark, lake, catalog, catalog.datasets["silver.orders_clean"]))
    build_table(table_run(spark, lake, catalog, catalog.datasets["gold.revenue"]))
    revenue = read_table("gold.revenue", lake_root=lake.root)
    assert revenue.to_dict("records") == [{"country": "DE", "revenue": 4, "code_length": 2}]
