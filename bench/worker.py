"""Run one lineage tool on one folder in this (fresh) process and print one JSON line.

    python -m bench.worker TOOL FOLDER --warmup DIR [--schema FILE] [--cache-dir DIR]
                           [--dialect duckdb]

Steps: import the tool, run it once on the warm-up folder (untimed: pays for imports and
first-call set-up), then ``gc.collect()`` and time one ``analyse(FOLDER)``; the counts are
taken afterwards, off the clock. Benchmark A starts one worker per repetition so that no
in-process state survives from one repetition to the next, and so that a competitor can run
from its own virtualenv when its dependencies clash with ours.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.timing import timed
from bench.tools import make_adapter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.worker")
    parser.add_argument("tool", choices=["ours", "clgraph", "sqllineage"])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--warmup", type=Path, required=True)
    parser.add_argument("--schema", type=Path)
    parser.add_argument("--cache-dir", type=Path)
    parser.add_argument("--dialect", default="duckdb")
    args = parser.parse_args(argv)

    schema = json.loads(args.schema.read_text(encoding="utf-8")) if args.schema else None
    options = {"dialect": args.dialect, "schema": schema}
    if args.cache_dir is not None:
        options["cache_dir"] = args.cache_dir
    warm = make_adapter(args.tool, dialect=args.dialect, schema=schema)
    warm.analyse(args.warmup)  # untimed; never touches --cache-dir
    adapter = make_adapter(args.tool, **options)

    seconds, raw = timed(lambda: adapter.analyse(args.folder))
    summary = adapter.summarise(raw)
    out = {"tool": args.tool, "parser": adapter.parser, "seconds": seconds, **summary.to_json()}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
