"""TheWorldShop for benchmark D: a copy of the repo's project and its raw data, in a temp folder.

``prepare(tmp)`` copies ``sql/``, ``metadata/`` and ``workspace.yaml`` into ``<tmp>/project``
(so nothing is written into the repository), then runs ``medallion demo-data`` (the real CLI, in
a subprocess) into ``<tmp>/s3``, the folder standing in for S3. Both sides of the benchmark read
that folder and never write to it; each run gets its own ``MEDALLION_HOME`` (lake, landing,
warehouse) so every run starts from an empty lake.

Size: user events per day scale with ``--rows`` (about 12.8 events per order, measured with
seed 42: 79,000 orders over 3 days give 1,010,053 events, ~330 MB of JSON lines), so the default
``BENCH_D_ROWS=79000`` and ``BENCH_D_DAYS=3`` give ~1M user events in total.

Seed: 22, not the CLI's default 42. Customers' order shares are Pareto(1.5) weights, whose
variance is infinite, so one seed can hand a single customer a large share of all orders; with
seed 42 at 79,000 orders one customer has 11,041 orders and 105,939 events, and
gold.fraud_features (events within 24 h before each order, joined on customer_id) enumerates
1.19 billion join pairs, which takes Spark tens of minutes on both sides and drowns any
orchestration cost. Of seeds 1-59, 42 has the most concentrated shares (Herfindahl index 0.020)
and 22 sits at the median (0.0008, ~50 M pairs). ``BENCH_D_SEED`` overrides it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ROWS = int(os.environ.get("BENCH_D_ROWS", "79000"))
DAYS = int(os.environ.get("BENCH_D_DAYS", "3"))
SEED = int(os.environ.get("BENCH_D_SEED", "22"))


@dataclass(frozen=True)
class ShopData:
    project: Path  # the copied project (sql/, metadata/, workspace.yaml)
    s3_root: Path  # the folder standing in for S3, filled by `medallion demo-data`
    summary: str  # the CLI's per-source table (files, rows, malformed, bytes)
    seconds: float  # how long generating took


def prepare(
    tmp: Path, rows: int = ROWS, days: int = DAYS, seed: int = SEED, checks: bool = True
) -> ShopData:
    project, s3_root = tmp / "project", tmp / "s3"
    for folder in ("sql", "metadata"):
        shutil.copytree(REPO / folder, project / folder)
    shutil.copy2(REPO / "workspace.yaml", project / "workspace.yaml")
    if not checks:
        without_checks(project)
    started = time.perf_counter()
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "medallion"),
            "demo-data",
            "--rows",
            str(rows),
            "--days",
            str(days),
            "--seed",
            str(seed),
            "--project",
            str(project),
        ],
        env=run_env(tmp / "generate-home", s3_root),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"medallion demo-data failed:\n{done.stdout}\n{done.stderr}")
    lines = done.stdout.strip().splitlines()
    return ShopData(project, s3_root, "\n".join(lines[1:]), time.perf_counter() - started)


def without_checks(project: Path) -> None:
    """Drop every validation rule from the copied project's datasets (``rules:`` and
    ``checks:``), for a run that must do the same work as a script without checks.

    The one rule kept: a not_null of the keys a merge or scd2 table or a warehouse merge
    matches rows by, where the SQL alone cannot prove them non-null (the catalog refuses such a
    key otherwise): one small Spark job per such table, on medallion's side only.
    """
    import yaml

    from medallion_assets.catalog import CatalogError, load_catalog

    path = project / "metadata" / "datasets.yaml"
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    for settings in document["datasets"].values():
        settings.pop("rules", None)
        settings.pop("checks", None)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    try:
        load_catalog(project, use_cache=False)
    except CatalogError as error:
        for issue in error.issues:
            found = re.search(
                r"add (\{kind: not_null, columns: \[.*?\]\}) to (\S+)'s rules", str(issue)
            )
            if found is None:
                raise
            rule, table = yaml.safe_load(found.group(1)), found.group(2)
            document["datasets"][table].setdefault("rules", []).append(rule)
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


def run_env(home: Path, s3_root: Path) -> dict[str, str]:
    """The environment of one run: its own MEDALLION_HOME, the shared local S3 folder.

    Variables that would send a run elsewhere (a real S3 endpoint, another lake or warehouse, a
    remote Spark, a DAGSTER_HOME) are removed, so both sides run on the embedded defaults.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MEDALLION_") and k not in ("DAGSTER_HOME", "SPARK_REMOTE")
    }
    env.update(
        MEDALLION_HOME=str(home),
        MEDALLION_S3_LOCAL_ROOT=str(s3_root),
        DAGSTER_DISABLE_TELEMETRY="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p),
    )
    # Spark settings may be tuned for the machine, identically for both sides.
    for name in ("MEDALLION_SPARK_SHUFFLE_PARTITIONS", "MEDALLION_SPARK_DRIVER_MEMORY"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def run_worker(command: list[str], env: dict[str, str], what: str, timeout: float) -> Any:
    """Run a benchmark worker process; its last JSON line on stdout, parsed."""
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, check=False, timeout=timeout
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        errors = [ln for ln in done.stderr.splitlines() if "[Stage " not in ln and ln.strip()]
        raise RuntimeError(f"{what} failed ({done.returncode}):\n" + "\n".join(errors[-30:]))
    return json.loads(lines[-1])
