"""The crash tests' project: the minimal project plus a daily-partitioned event source whose
gold table appends into the warehouse, with its raw data; and a snapshot of everything a run
leaves (every lake table's current rows, every warehouse table's rows) to compare runs by."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from medallion_assets.catalog import load_catalog
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.io.warehouse import warehouse_from_url
from medallion_assets.lake import Lake
from tests.adapters.minimal import MINIMAL, orders

DAYS = ("2026-01-01", "2026-01-02")
EVENTS_SOURCE = """
  events:
    system: s3_raw
    bucket: minimal-raw
    prefix: events/
    partition: "dt={date}"
    format: jsonl
    columns:
      - {name: event_id, type: string, nullable: false}
      - {name: event_date, type: date, nullable: false}
      - {name: kind, type: string}
"""
EVENTS_DATASETS = """
  bronze.events:
    partitions: {type: daily, column: event_date, start: 2026-01-01}
  gold.daily_events:
    partitions: {type: daily, column: event_date, start: 2026-01-01}
    rules:
      - {kind: unique, columns: [event_date, kind]}
"""
EVENTS_TARGET = (
    "  - {table: gold.daily_events, system: warehouse, "
    "warehouse_table: analytics.daily_events, mode: append}\n"
)
SQL = {
    "bronze/events.sql": "SELECT event_id, event_date, kind, _ingested_at, _source_file, "
    "_batch_id FROM raw.events\n",
    "gold/daily_events.sql": "SELECT event_date, kind, count(*) AS events "
    "FROM bronze.events GROUP BY event_date, kind\n",
}
# Columns whose values say when or by which run a row was ingested: they differ between two
# runs of the same data by design.
VOLATILE = {"_ingested_at", "_batch_id"}


def faults_project(where: Path) -> Path:
    """A project at ``where`` with its own state folder and raw data."""
    root = where / "project"
    shutil.copytree(MINIMAL, root)
    meta = root / "metadata"
    (meta / "sources.yaml").write_text((meta / "sources.yaml").read_text() + EVENTS_SOURCE)
    (meta / "datasets.yaml").write_text((meta / "datasets.yaml").read_text() + EVENTS_DATASETS)
    (meta / "targets.yaml").write_text((meta / "targets.yaml").read_text() + EVENTS_TARGET)
    for path, text in SQL.items():
        (root / "sql" / path).write_text(text)
    store = LocalFolderObjectStore(root / ".medallion" / "s3")
    store.ensure_bucket("minimal-raw")
    countries = ["de", "fr", "gb"]
    store.put(
        "minimal-raw",
        "orders/a.jsonl",
        orders(*({"order_id": i, "amount": i * 3, "country": countries[i % 3]} for i in range(9))),
    )
    for d, day in enumerate(DAYS):
        events = [
            {"event_id": f"{day}-{i}", "event_date": day, "kind": ["view", "click", "buy"][i % 3]}
            for i in range(7 + d)
        ]
        store.put("minimal-raw", f"events/dt={day}/part-0.jsonl", orders(*events))
    return root


def run_env(root: Path, dagster_home: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``medallion run`` of ``root``: its own state, its own instance."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEDALLION_", "DAGSTER_", "PYTEST_"))
    }
    env.update(MEDALLION_HOME=str(root / ".medallion"), DAGSTER_HOME=str(dagster_home))
    env.update(extra)
    return env


def start_run(root: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    medallion = Path(sys.executable).parent / "medallion"
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(medallion), "run", "--project", str(root)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )


def snapshot(root: Path) -> dict[str, Any]:
    """Every lake table's current rows (per partition) and every warehouse table's rows,
    sorted, without the columns that differ between runs by design."""
    catalog = load_catalog(root, use_cache=False)
    lake = Lake.local(root / ".medallion" / "lake")
    tables = [*catalog.datasets]
    tables += [f"{n}__quarantine" for n, d in catalog.datasets.items() if d.layer == "bronze"]
    found: dict[str, Any] = {}
    for table in tables:
        for partition in lake.partitions(table) or [None]:
            version = lake.current(table, partition)
            where = f"lake {table}" + (f"[{partition}]" if partition else "")
            found[where] = None if version is None else _rows(lake.read_arrow([version]))
    warehouse = warehouse_from_url(f"duckdb:///{root / '.medallion' / 'warehouse.duckdb'}")
    try:
        for target in catalog.targets.values():
            found[f"warehouse {target.warehouse_table}"] = _rows(
                warehouse.read(target.warehouse_table)
            )
    finally:
        warehouse.close()
    return found


def _rows(table: Any) -> list[str]:
    kept = table.select([c for c in table.column_names if c not in VOLATILE])
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in kept.to_pylist())
