"""``python -m bench [A] [B] ... [N]``: run the chosen benchmarks (all by default).

Always exits 0: the benchmarks are informational, a missed bar prints FAIL but fails nothing.
A benchmark that crashes (e.g. our API changed under it) is reported and the others still run.
"""

from __future__ import annotations

import sys
import time
import traceback

from bench import (
    catalog_bench,
    contention_bench,
    dag_bench,
    definitions_bench,
    env_bench,
    incremental_bench,
    lake_bench,
    lineage_bench,
    orchestration_bench,
    scale_bench,
    sdp_bench,
    simulate_accuracy,
    simulate_bench,
    small_project_bench,
    spark_start_bench,
    validation_bench,
)

BENCHMARKS = {
    "A": lineage_bench.main,
    "B": catalog_bench.main,
    "C": dag_bench.main,
    "D": orchestration_bench.main,
    "E": definitions_bench.main,
    "F": validation_bench.main,
    "G": sdp_bench.main,
    "H": contention_bench.main,
    "I": simulate_bench.main,
    "J": simulate_accuracy.main,
    "K": spark_start_bench.main,
    "L": lake_bench.main,
    "M": small_project_bench.main,
    "N": scale_bench.main,
    "O": incremental_bench.main,
    "P": env_bench.main,
}


def main(argv: list[str]) -> int:
    chosen = [a.upper() for a in argv] or list(BENCHMARKS)
    unknown = [c for c in chosen if c not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
        return 0
    print(f"python {sys.version.split()[0]}; benchmarks: {', '.join(chosen)}")
    for name in chosen:
        start = time.perf_counter()
        try:
            BENCHMARKS[name]()
        except Exception:  # report and go on: benchmarks never fail the run
            print(f"\n  [ERROR] benchmark {name} crashed:")
            traceback.print_exc(file=sys.stdout)
        print(f"  ({name} took {time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
