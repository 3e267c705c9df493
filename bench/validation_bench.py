"""Benchmark F: the cost of validation, a 1M-row table built with its checks against without.

Data: TheWorldShop raw files from ``medallion demo-data`` (``shop_data``) for one day, sized so
that the day holds ~1M user events (``BENCH_F_ROWS`` orders, default 79,000; seed 22). One
worker process (``bench.validation_worker``) ingests ``bronze.user_events`` off the clock, then
times ``silver.user_events`` (dedup of redelivered events: a window over event_id) built with
and without the checks its metadata declares, ``BENCH_F_REPS`` times each (default 5),
alternating the order. Bar: with / without <= 1.5 (ratio of medians; fastest reps beside it).

Per-check cost: the seconds each check took in the checked builds (median), for the demo table
and for a synthetic 1M-row table carrying one rule of every kind a staged table can have
(``bench.validation_project``), whose ratio is printed for information: which kinds a table
carries decides what validation costs it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench import report
from bench.shop_data import prepare, run_env, run_worker
from bench.timing import median

ROWS = int(os.environ.get("BENCH_F_ROWS", "79000"))
REPS = int(os.environ.get("BENCH_F_REPS", "5"))
BAR = 1.5
TIMEOUT_S = 3600


def main() -> None:
    print(report.heading("F. Cost of validation: a 1M-row table with its checks vs without"))
    with tempfile.TemporaryDirectory(prefix="medallion-bench-f-") as tmp:
        data = prepare(Path(tmp), rows=ROWS, days=1)
        print(f"  raw data (medallion demo-data, one day, {data.seconds:.0f} s):")
        print(
            "\n".join(
                "    " + ln for ln in data.summary.replace(str(data.s3_root), "<s3>").splitlines()
            )
        )
        command = [sys.executable, "-m", "bench.validation_worker", str(data.project), tmp]
        command += ["--reps", str(REPS)]
        result = run_worker(
            command, run_env(Path(tmp, "home"), data.s3_root), "the worker", TIMEOUT_S
        )
    demo, kinds = result["demo"], result["kinds"]
    print()
    print(
        report.table(
            RATIO_HEADERS, [_ratio_row(demo, "TheWorldShop"), _ratio_row(kinds, "every kind")]
        )
    )
    with_s, without_s, best = _ratios(demo)
    print()
    print(
        report.verdict(
            f"{demo['table']} with checks / without <= {BAR:g} (ratio of medians)",
            with_s / without_s <= BAR,
            f"{with_s / without_s:.3f} ({with_s:.2f} s / {without_s:.2f} s); "
            f"fastest reps {best:.3f}",
        )
    )
    for part in (demo, kinds):
        print()
        print(
            f"  per-check cost, {part['table']} ({_rows(part):,} rows), "
            f"median of {REPS} checked builds:"
        )
        print(report.table(["check", "kind", "median s", "share of build"], _check_rows(part)))


RATIO_HEADERS = [
    "project",
    "table",
    "rows",
    "checks",
    "without s",
    "with s",
    "ratio",
    "fastest ratio",
]


def _rows(part: dict[str, Any]) -> int:
    return int(part["runs"]["with"][0]["rows"])


def _ratios(part: dict[str, Any]) -> tuple[float, float, float]:
    with_s = [r["seconds"] for r in part["runs"]["with"]]
    without_s = [r["seconds"] for r in part["runs"]["without"]]
    return median(with_s), median(without_s), min(with_s) / min(without_s)


def _ratio_row(part: dict[str, Any], project: str) -> list[object]:
    with_s, without_s, best = _ratios(part)
    return [
        project,
        part["table"],
        _rows(part),
        len(part["rules"]),
        without_s,
        with_s,
        with_s / without_s,
        best,
    ]


def _check_rows(part: dict[str, Any]) -> list[list[object]]:
    seconds: dict[str, list[float]] = defaultdict(list)
    kinds: dict[str, str] = {}
    for run in part["runs"]["with"]:
        for name, check in run["checks"].items():
            seconds[name].append(check["seconds"])
            kinds[name] = check["kind"]
    build = median([r["seconds"] for r in part["runs"]["with"]])
    rows: list[list[object]] = [
        [name, kinds[name], median(values), f"{median(values) / build:.1%}"]
        for name, values in seconds.items()
    ]
    total = sum(float(r[2]) for r in rows)  # type: ignore[arg-type]
    rows.append(["all checks", "", total, f"{total / build:.1%}"])
    return rows
