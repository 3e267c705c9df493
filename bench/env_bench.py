"""Benchmark P: promoting a dev environment against rebuilding what it changed (issue 47).

    python -m bench P        (BENCH_P_ROWS=20000,100000; BENCH_P_KEEP=1 keeps the data)

In a temporary folder outside the repository: a copy of the repository's project and
``medallion demo-data --rows N``, one ``medallion run`` (not timed), then a breaking change to
``silver.orders_usd`` (cancelled orders left out: its rows change, so its five gold readers and
the table reading one of them are rebuilt), and, each timed launch to exit as its own process:

- env: ``medallion run --env bench``: the plan, then the changed table and every table it
  reaches built on their branches ``env_bench`` (what a team pays to try the change);
- promote: ``medallion promote bench``: those tables made current on main, nothing recomputed;
- rebuild: ``medallion run --full-refresh <those tables>`` on main: the same tables rebuilt
  from the same inputs, the baseline a promotion replaces.

Bar: the promote process <= 5% of the rebuild process (the promotion itself, as the command
says, is a fraction of its process's start). The tables' rows after the promotion are compared
with the rebuild's (equal, or the benchmark says which differ). Informational.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from bench import report
from bench.scale_bench import BIN, Run, defaults, generate, load, measure

SIZES = [int(s) for s in os.environ.get("BENCH_P_ROWS", "20000,100000").split(",") if s]
KEEP = os.environ.get("BENCH_P_KEEP", "") == "1"
BAR = 0.05


def medallion(side: str, folder: Path, project: Path, s3_root: Path, *args: str) -> tuple[Run, str]:
    command = [str(BIN / "medallion"), *args, "--project", str(project)]
    return measure(side, command, defaults(folder / "home", s3_root), folder)


def change(project: Path) -> None:
    """Cancelled orders left out of ``silver.orders_usd``: its rows change, so every table
    reading it is rebuilt (its five gold readers and the one reading one of them)."""
    path = project / "sql/silver/orders_usd.sql"
    text = path.read_text()
    old = "WHERE o.version_rank = 1"
    if old not in text:
        raise RuntimeError(f"{path} no longer holds {old!r}: pick another change")
    path.write_text(text.replace(old, old + " AND o.status <> 'cancelled'", 1))


def rows_of(folder: Path, tables: list[str]) -> dict[str, str]:
    """A digest of each table's rows on main, read without a JVM."""
    # the project's reader: loaded only when the bench compares
    from medallion_assets.testing import read_table

    found = {}
    for table in tables:
        frame = read_table(table, lake_root=folder / "home" / "lake")
        lines = sorted(
            "|".join(map(str, r)) for r in frame[sorted(frame.columns)].itertuples(index=False)
        )
        found[table] = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    return found


def main() -> None:
    print(report.heading("P. Dev environments: promote against rebuilding what changed"))
    for rows in SIZES:
        one_size(rows)


def one_size(rows: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="medallion-bench-p-"))
    print(
        f"  {rows:,} orders; working folder: {tmp} (load average {load()} on {os.cpu_count()} CPUs)"
    )
    try:
        project, s3_root, _gen, _summary = generate(tmp, rows)
        first, _ = medallion("first", tmp, project, s3_root, "run")
        if not first.green:
            print(f"  [FAILED] the first run: {first.problems}")
            return
        change(project)
        planned, said = medallion(
            "plan", tmp, project, s3_root, "plan", "--env", "bench", "--format", "json"
        )
        tables = json.loads(said)["to_build"]
        env, _ = medallion("env", tmp, project, s3_root, "run", "--env", "bench")
        promote, out = medallion("promote", tmp, project, s3_root, "promote", "bench")
        promoted = rows_of(tmp, tables)
        rebuild, _ = medallion(
            "rebuild", tmp, project, s3_root, "run", "--full-refresh", ",".join(tables)
        )
        rebuilt = rows_of(tmp, tables)
        runs = [planned, env, promote, rebuild]
        print(report.table(
            ["step", "exit", "wall s", "x rebuild"],
            [[r.side, r.exit, round(r.wall, 2), round(r.wall / rebuild.wall, 3)] for r in runs],
        ))  # fmt: skip
        print(f"  {len(tables)} table(s) changed: {', '.join(tables)}")
        same = [t for t in tables if promoted[t] == rebuilt[t]]
        print(f"  rows equal after promote and after rebuild: {len(same)}/{len(tables)}")
        said = out.strip().splitlines()[0] if out.strip() else ""
        print(f"  the command said: {said}")
        ratio = promote.wall / rebuild.wall
        ok = all(r.green for r in runs) and len(same) == len(tables) and ratio <= BAR
        print(report.verdict(f"promote <= 5% of rebuild at {rows:,}", ok, f"{ratio:.3f}"))
    finally:
        if KEEP:
            print(f"  kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
