"""Benchmark E's worker: load the code location of one project in this (fresh) process.

    python -m bench.definitions_worker PROJECT [--profile FILE]

Timed in order, each once: the imports (``dagster`` and
``medallion_assets.adapters.code_location``),
then ``build_definitions(PROJECT)``, then ``defs.resolve_asset_graph()``, then
``defs.resolve_all_job_defs()``. ``build_definitions`` resolves both itself (with the garbage
collector paused), so the last two are what a code server's own calls then cost.
``load_catalog`` is timed inside ``build_definitions`` by
wrapping the name ``build`` calls, so it is the same call with the same cache state, not a
second load; likewise our translator's spec methods (``get_asset_spec``, ``get_source_spec``,
``get_exposure_spec``: metadata, tags and column lineage into ``AssetSpec``s). ``--profile``
runs the three timed steps under cProfile and dumps the stats there. Prints one JSON line.

    python -m bench.definitions_worker DEPS.json --baseline

The baseline: the same tables with the same dependencies (``DEPS.json``: table -> the tables
and raw sources it reads) as plain ``@dg.asset``s from the smallest factory, one
``Definitions``, the same two resolutions; this package is not imported.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any


def _accumulate(owner: Any, attr: str, spent: dict[str, float], label: str) -> None:
    """Wrap ``owner.attr`` so that its wall time adds up in ``spent[label]``."""
    original = getattr(owner, attr)

    @functools.wraps(original)
    def timed(*a: Any, **kw: Any) -> Any:
        began = time.perf_counter()
        try:
            return original(*a, **kw)
        finally:
            spent[label] += time.perf_counter() - began

    setattr(owner, attr, timed)


def baseline(deps_file: Path) -> dict[str, Any]:
    """Plain assets with the project's dependencies: Dagster's own floor for this graph."""
    started = time.perf_counter()
    import dagster as dg

    imports = time.perf_counter() - started
    deps: dict[str, list[str]] = json.loads(deps_file.read_text())

    def key(table: str) -> dg.AssetKey:
        return dg.AssetKey(table.split(".", 1))

    def make(table: str, reads: list[str]) -> dg.AssetsDefinition:
        @dg.asset(key=key(table), deps=[key(t) for t in reads])
        def _asset() -> None:
            return None

        return _asset

    started = time.perf_counter()
    defs = dg.Definitions(assets=[make(t, reads) for t, reads in deps.items()])
    built = time.perf_counter()
    graph = defs.resolve_asset_graph()
    resolved = time.perf_counter()
    jobs = defs.resolve_all_job_defs()
    done = time.perf_counter()
    return {
        "imports": imports,
        "build_definitions": built - started,
        "resolve_asset_graph": resolved - built,
        "resolve_all_job_defs": done - resolved,
        "total": done - started,
        "asset_keys": len(list(graph.get_all_asset_keys())),
        "jobs": len(jobs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.definitions_worker")
    parser.add_argument("project", type=Path)
    parser.add_argument("--profile", type=Path)
    parser.add_argument("--baseline", action="store_true")
    args = parser.parse_args(argv)
    if args.baseline:
        sys.stdout.write(json.dumps(baseline(args.project)) + "\n")
        return 0

    started = time.perf_counter()
    import dagster as dg  # noqa: F401

    from medallion_assets.adapters import code_location as build
    from medallion_assets.adapters.translator import DatasetTranslator

    imports = time.perf_counter() - started
    spent: dict[str, float] = {"load_catalog": 0.0, "translator": 0.0}
    _accumulate(build, "load_catalog", spent, "load_catalog")
    for method in ("get_asset_spec", "get_source_spec", "get_exposure_spec"):
        _accumulate(DatasetTranslator, method, spent, "translator")

    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    started = time.perf_counter()
    defs = build.build_definitions(args.project)
    built = time.perf_counter()
    graph = defs.resolve_asset_graph()
    resolved = time.perf_counter()
    jobs = defs.resolve_all_job_defs()
    done = time.perf_counter()
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(str(args.profile))

    out = {
        "imports": imports,
        "build_definitions": built - started,
        "load_catalog": spent["load_catalog"],
        "translator": spent["translator"],
        "resolve_asset_graph": resolved - built,
        "resolve_all_job_defs": done - resolved,
        "total": done - started,
        "asset_keys": len(list(graph.get_all_asset_keys())),
        "jobs": len(jobs),
    }
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
