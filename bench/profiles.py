"""Read a cProfile dump the way the benchmarks report it: own time per package, top functions.

Own time (``tottime``) adds up to the profiled total without double counting, so "how much is
Dagster" is the own time of functions in files under ``dagster*/`` (plus the builtins and
standard-library calls they make); cumulative time names the entry points that dominate.
"""

from __future__ import annotations

import pstats
from collections import defaultdict
from pathlib import Path

PACKAGES = (
    "dagster",
    "dagster_shared",
    "dagster_pipes",
    "medallion_assets",
    "sqlglot",
    "sqlglotc",
    "pydantic",
    "pydantic_core",
    "yaml",
    "pyspark",
    "duckdb",
)
UNOWNED = ("(builtins)", "(stdlib/other)")
MAX_DEPTH = 12


def package_of(filename: str) -> str:
    """``.../site-packages/dagster/_core/x.py`` -> ``dagster``; builtins -> ``(builtins)``."""
    if filename.startswith("<") or filename == "~":
        return UNOWNED[0]
    parts = Path(filename).parts
    for part in parts:  # the outermost match wins: dagster/_vendored/... still counts as dagster
        if part in PACKAGES:
            return "dagster" if part.startswith("dagster") else part
    if "site-packages" in parts:
        after = parts[parts.index("site-packages") + 1 :]
        return after[0].split(".")[0] if after else UNOWNED[1]
    return UNOWNED[1]


def own_time_by_package(dump: Path) -> tuple[float, dict[str, float]]:
    """(total own seconds, own seconds per package), largest first.

    Own time of builtins and the standard library is charged to the package that called them
    (following callers up through further stdlib frames, split by each caller's share), so
    ``dict`` copies inside Dagster count as Dagster and ``re`` calls inside sqlglot as sqlglot.
    """
    stats = pstats.Stats(str(dump)).stats  # type: ignore[attr-defined]
    shares: dict[str, float] = defaultdict(float)

    def charge(func: tuple[str, int, str], seconds: float, depth: int) -> None:
        package = package_of(func[0])
        callers = stats.get(func, (0, 0, 0, 0, {}))[4]
        if package not in UNOWNED or not callers or depth > MAX_DEPTH or seconds < 1e-6:
            shares[package] += seconds
            return
        weights = {caller: max(entry[2], 1e-12) for caller, entry in callers.items()}
        total = sum(weights.values())
        for caller, weight in weights.items():
            charge(caller, seconds * weight / total, depth + 1)

    for func, (_, _, tottime, _, _) in stats.items():
        charge(func, tottime, 0)
    total = sum(shares.values())
    return total, dict(sorted(shares.items(), key=lambda kv: -kv[1]))


def top_functions(
    dump: Path, packages: tuple[str, ...] | None = None, key: str = "cumtime", limit: int = 10
) -> list[tuple[str, float, float]]:
    """(function, own s, cumulative s) of the ``limit`` largest by ``key`` (tottime|cumtime)."""
    stats = pstats.Stats(str(dump))
    rows = []
    for (filename, line, name), (_, _, tottime, cumtime, _) in stats.stats.items():  # type: ignore[attr-defined]
        package = package_of(filename)
        if packages is None or package in packages:
            short = "/".join(Path(filename).parts[-2:]) if not filename.startswith("<") else ""
            rows.append((f"{short}:{line} {name}" if short else name, tottime, cumtime))
    rows.sort(key=lambda r: -(r[1] if key == "tottime" else r[2]))
    return rows[:limit]
