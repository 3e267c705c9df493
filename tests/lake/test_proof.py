""" "Unchanged" is proved against the catalog, not assumed: a version another engine altered
after medallion published it (pyiceberg here, sharing the JDBC catalog) is not reused, and the
reason is said. Real Spark and Iceberg write; real pyiceberg alters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyiceberg.types import StringType

from medallion_assets.lake import Lake, versions
from medallion_assets.lake.catalog import LakeCatalog
from tests.lake_helpers import data_files, publish_frame

pytestmark = pytest.mark.slow  # a real Spark session

CODE, INPUTS = "code-1", {"bronze.orders": "7"}


@pytest.fixture
def published(lake_spark: Any, local_lake: LakeCatalog) -> tuple[Lake, Any]:
    lake = Lake(local_lake)
    frame = lake_spark.createDataFrame(
        [(1, 5.0, "gb"), (2, 7.5, "fr")], "id INT, amount DOUBLE, country STRING"
    )
    version = publish_frame(lake, lake_spark, frame, "silver.orders_usd", CODE, INPUTS)
    return lake, version


def other_engine(lake: Lake) -> Any:
    """The table as another engine sees it: pyiceberg through the same catalog."""
    return versions.load(versions.open_catalog(lake.catalog), "silver.orders_usd")


def reused(lake: Lake, said: list[str]) -> Any:
    return lake.reusable("silver.orders_usd", None, CODE, INPUTS, say=said.append)


def test_an_untouched_version_is_reused(published):
    lake, version = published
    said: list[str] = []
    assert reused(lake, said) == version and said == []


@pytest.mark.parametrize(
    ("alter", "reason"),
    [
        (lambda update: update.delete_column("country"), "column country dropped"),
        (lambda update: update.rename_column("amount", "amt"), "column amount renamed to amt"),
        (
            lambda update: update.add_column("note", StringType()),
            "column(s) note added",
        ),
    ],
    ids=["drop", "rename", "add"],
)
def test_a_schema_changed_by_another_engine_is_not_unchanged(published, alter, reason):
    lake, _ = published
    with other_engine(lake).update_schema() as update:
        alter(update)
    said: list[str] = []
    assert reused(lake, said) is None
    (line,) = said
    assert "rebuilding silver.orders_usd, though its code and inputs are unchanged" in line
    assert f"its schema was changed outside medallion: {reason}" in line


def test_a_deleted_data_file_is_not_unchanged(published):
    lake, version = published
    for path in data_files(lake, version):
        path.unlink()
    said: list[str] = []
    assert reused(lake, said) is None
    assert "its data file" in said[0] and "is gone" in said[0]


def test_another_engines_commit_is_not_a_version_of_medallions(published, lake_spark):
    lake, _ = published
    table = other_engine(lake)
    table.append(table.scan().to_arrow().slice(0, 1))  # a commit medallion did not make
    assert lake.reusable("silver.orders_usd", None, CODE, INPUTS) is None


def test_the_rebuild_of_an_altered_table_is_what_its_sql_makes_again(published, lake_spark):
    lake, _ = published
    with other_engine(lake).update_schema() as update:
        update.rename_column("amount", "amt")
    frame = lake_spark.createDataFrame(
        [(1, 5.0, "gb"), (2, 7.5, "fr")], "id INT, amount DOUBLE, country STRING"
    )
    rebuilt = publish_frame(lake, lake_spark, frame, "silver.orders_usd", CODE, INPUTS)
    rows = lake.read(lake_spark, [rebuilt])
    assert sorted(rows.columns) == ["amount", "country", "id"]  # amt gone, amount back
    assert sorted((r.id, r.amount) for r in rows.collect()) == [(1, 5.0), (2, 7.5)]
    assert reused(lake, []) == rebuilt  # proved again


def test_a_file_past_the_runs_few_is_found_by_doctor_deep(lake_spark, local_lake):
    """A run reads back the newest FILES_CHECKED data files; `medallion doctor --deep` reads
    every one, and names the table and the rebuild that fixes it."""
    from medallion_assets.catalog import load_catalog
    from medallion_assets.lake.proof import FILES_CHECKED
    from medallion_assets.preflight.tables import table_findings
    from tests.conftest import REPO

    lake = Lake(local_lake)
    frame = lake_spark.range(0, 1200).selectExpr("CAST(id AS INT) AS id").repartition(12)
    publish_frame(lake, lake_spark, frame, "silver.orders_usd", CODE, INPUTS)
    table = other_engine(lake)
    paths = [
        entry.data_file.file_path
        for manifest in table.current_snapshot().manifests(table.io)
        for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True)
    ]
    assert len(paths) > FILES_CHECKED
    oldest = paths[0].removeprefix("file:")
    Path(oldest).unlink()

    assert lake.doubt("silver.orders_usd") == ""  # a run's few do not reach it
    assert oldest in lake.doubt("silver.orders_usd", every_file=True)
    catalog = load_catalog(REPO)
    findings = table_findings(lake, catalog)
    (failed,) = [f for f in findings if f.failed]
    assert failed.line.startswith(f"silver.orders_usd: its data file file:{oldest} is gone: ")
    assert "medallion build silver.orders_usd --rebuild" in failed.line
    assert findings[-1].status == "warning" and findings[-1].line.startswith("0 of 1 version")
