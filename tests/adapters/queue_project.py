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


# --- the balanced variant: several runs at once on one system with a small limit ---------------

# Three slots for two runs of two steps each: the queue (Dagster's, which holds back a run while
# its pools have no free slot) starts the second run while the first holds two slots, so steps
# of different runs meet, and only the pool keeps them at three rather than four.
SPARK_LIMIT = 3
WAVES = ("wave_a", "wave_b")
WAVE_TABLES = {wave: (f"silver.{wave}_1", f"silver.{wave}_2") for wave in WAVES}
# Sleeps 4 s per row (the raw store holds one order), in the executor: long enough for steps
# of different runs to meet, sleeping rather than computing, so the 2 cores are not the limit.
SLOW_COPY = (
    "SELECT order_id, amount, country FROM bronze.orders WHERE amount >= 0 "
    "AND coalesce(reflect('java.lang.Thread', 'sleep', CAST(4000 AS BIGINT)), '') <> 'never'\n"
)
BALANCED_SYSTEMS = f"""
systems:
  s3_raw: {{kind: s3, throttle: {{max_concurrent_jobs: 2}}}}
  spark: {{kind: spark, throttle: {{max_concurrent_jobs: {SPARK_LIMIT}}}}}
  warehouse: {{kind: postgres, throttle: {{max_concurrent_jobs: 1}}}}
"""
BALANCED_PROFILES = f"""
active: balanced
profiles:
  balanced:
    settings:
      max_concurrent_runs: {len(WAVES)}
      spread_over_systems: true
"""


def balanced_project(tmp_path: Path, monkeypatch) -> Path:  # type: ignore[no-untyped-def]
    """The minimal project with two pipelines (``wave_a``, ``wave_b``) of two slow silver
    tables each, every one of them on ``spark``, whose ``max_concurrent_jobs`` is
    ``SPARK_LIMIT``; only ``balanced`` is defined, with room for both runs at once."""
    root, _store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
    )
    metadata = root / "metadata"
    (metadata / "systems.yaml").write_text(BALANCED_SYSTEMS)
    (metadata / "profiles.yaml").write_text(BALANCED_PROFILES)
    pipelines = "".join(
        f'  - id: {wave}\n    schedule: "0 4 * * *"\n    select: {{tags: [{wave}]}}\n'
        for wave in WAVES
    )
    (metadata / "pipelines.yaml").write_text("pipelines:\n" + pipelines)
    datasets = "".join(
        f"  {table}:\n    tags: [{wave}]\n"
        for wave, tables in WAVE_TABLES.items()
        for table in tables
    )
    (metadata / "datasets.yaml").write_text("datasets:\n" + datasets)
    for tables in WAVE_TABLES.values():
        for table in tables:
            (root / "sql" / "silver" / f"{table.split('.')[1]}.sql").write_text(SLOW_COPY)
    return root
