"""The minimal project with two pipelines of different weight and balanced/focus profiles:
``reports`` runs ``silver.orders_clean`` and ``gold.order_count`` (criticality low),
``finance`` runs everything up to ``gold.revenue`` (critical), so both need the ``spark``
pool. Under focus one run at a time runs (``max_concurrent_runs: 1``) and low-priority runs
are pre-empted."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.minimal import minimal_project

PROFILES = """
active: balanced
profiles:
  balanced:
    settings:
      max_concurrent_runs: 2
      criticality_priority: {critical: 3, high: 2, normal: 1, low: 0}
  focus:
    settings:
      max_concurrent_runs: 1
      criticality_priority: {critical: 10, high: 5, normal: 1, low: 0}
      preempt_low_priority: true
"""
PIPELINES = """
pipelines:
  - id: reports
    schedule: "0 4 * * *"
    select: {tags: [reports]}
  - id: finance
    schedule: "0 3 * * *"
    select: {sinks: [gold.revenue]}
"""
DATASETS = """
datasets:
  silver.orders_clean:
    criticality: low
    tags: [reports]
    checks: [keys]
  gold.order_count:
    criticality: low
    tags: [reports]
  gold.revenue:
    criticality: critical
"""


def queue_project(tmp_path: Path, monkeypatch) -> Path:  # type: ignore[no-untyped-def]
    root, _store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
    )
    metadata = root / "metadata"
    (metadata / "profiles.yaml").write_text(PROFILES)
    (metadata / "pipelines.yaml").write_text(PIPELINES)
    (metadata / "datasets.yaml").write_text(DATASETS)
    (root / "sql" / "gold" / "order_count.sql").write_text(
        "SELECT count(*) AS orders FROM silver.orders_clean\n"
    )
    return root
