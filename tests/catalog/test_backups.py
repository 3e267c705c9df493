"""Backups and recovery edges in metadata: a backup is another project table holding a copy of
a table, read as it is published, at a cost; it becomes one of the table's routes and a step of
the recovery graph. A backup that is not a table of the project or has other columns, and
recovery edges that close a cycle, are refused at catalog load, naming the file, the field and
the cycle."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from medallion_assets.catalog import CatalogError, load_catalog
from medallion_assets.recovery.paths import RecoveryGraph
from medallion_assets.recovery.reroute import routes

MINIMAL = Path(__file__).parent / "minimal_project"
SNAPSHOT = "SELECT order_id, amount, country FROM silver.orders_clean\n"


def project(tmp_path: Path, settings: dict[str, dict], tables: dict[str, str]) -> Path:
    """The minimal project with more tables (name -> SQL) and datasets.yaml settings merged."""
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    for name, sql in tables.items():
        layer, table = name.split(".")
        (root / "sql" / layer / f"{table}.sql").write_text(sql)
    path = root / "metadata" / "datasets.yaml"
    data = yaml.safe_load(path.read_text())
    for table, extra in settings.items():
        data["datasets"].setdefault(table, {}).update(extra)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def problems(root: Path) -> str:
    with pytest.raises(CatalogError) as raised:
        load_catalog(root, use_cache=False)
    return str(raised.value)


def test_a_backup_is_a_route_and_a_step_read_as_published(tmp_path):
    root = project(
        tmp_path,
        {"silver.orders_clean": {"backups": [{"table": "silver.orders_snapshot", "cost": 2}]}},
        {"silver.orders_snapshot": SNAPSHOT},  # a snapshot of the table itself: no cycle
    )
    catalog = load_catalog(root, use_cache=False)
    dataset = catalog.datasets["silver.orders_clean"]
    (_primary, backup) = routes(catalog, dataset)
    assert (backup.name, backup.kind, backup.cost) == ("backup_silver_orders_snapshot", "backup", 2)
    assert backup.detail == "metadata/datasets.yaml#datasets.silver.orders_clean.backups[0]"
    assert backup.alternate.upstream == ("silver.orders_snapshot",)
    for column in ("order_id", "amount", "country"):
        assert column in backup.alternate.sql
    assert "FROM silver.orders_snapshot" in backup.alternate.sql

    graph = RecoveryGraph.of(catalog)
    chosen = graph.chosen("gold.revenue", {"source:orders"})
    assert chosen is not None
    assert dict(chosen.routes) == {
        "silver.orders_clean": "backup_silver_orders_snapshot",
        "gold.revenue": "primary",
    }
    assert chosen.cost == 2 + 1 and "silver.orders_snapshot" in chosen.nodes
    assert graph.chosen("gold.revenue", {"source:orders", "silver.orders_snapshot"}) is None


def test_a_backup_must_be_another_table_of_the_project_with_the_same_columns(tmp_path):
    root = project(
        tmp_path,
        {"silver.orders_clean": {"backups": [{"table": "silver.nowhere"}]}},
        {},
    )
    text = problems(root)
    assert "datasets.silver.orders_clean.backups[0].table" in text
    assert "'silver.nowhere' is not another table of this project" in text

    narrow = project(
        tmp_path / "narrow",
        {"silver.orders_clean": {"backups": [{"table": "silver.ids"}]}},
        {"silver.ids": "SELECT order_id FROM silver.orders_clean\n"},
    )
    text = problems(narrow)
    assert "silver.ids has other columns (missing: amount, country; extra: -)" in text


def test_tables_backing_each_other_up_are_refused_with_the_cycle_named(tmp_path):
    root = project(
        tmp_path,
        {
            "silver.copy_a": {"backups": [{"table": "silver.copy_b"}]},
            "silver.copy_b": {"backups": [{"table": "silver.copy_a"}]},
        },
        {"silver.copy_a": SNAPSHOT, "silver.copy_b": SNAPSHOT},
    )
    text = problems(root)
    assert "datasets.silver.copy_" in text and ".backups" in text
    assert "recovery edges form a cycle: silver.copy_" in text
    assert "two tables may not back each other up" in text


def test_an_alternate_reading_a_table_built_from_it_is_refused_with_the_cycle_named(tmp_path):
    root = project(
        tmp_path,
        {
            "silver.orders_clean": {
                "alternates": [{"name": "from_copy", "sql": "alternates/silver/from_copy.sql"}]
            }
        },
        {"silver.orders_copy": SNAPSHOT},
    )
    folder = root / "sql" / "alternates" / "silver"
    folder.mkdir(parents=True)
    (folder / "from_copy.sql").write_text(
        "SELECT order_id, amount, country FROM silver.orders_copy\n"
    )
    text = problems(root)
    assert "datasets.silver.orders_clean.alternates" in text
    assert (
        "recovery edges form a cycle: silver.orders_clean -> silver.orders_copy -> "
        "silver.orders_clean (silver.orders_clean via from_copy)"
    ) in text or (
        "recovery edges form a cycle: silver.orders_copy -> silver.orders_clean -> "
        "silver.orders_copy (silver.orders_clean via from_copy)"
    ) in text
