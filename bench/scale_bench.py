"""Benchmark N: the demo at 200,000 orders with the default settings, against 20,000 orders and
against a plain PySpark script and SDP on the same data.

    python -m bench N        (BENCH_N_ROWS=20000,200000; BENCH_N_KEEP=1 keeps the data;
                              BENCH_N_TIMEOUT=10800 seconds per process)

Issue 43's "Benchmarks": the demo at 200,000 orders (~4 M raw records, ~1.3 GB) must run green
end to end (raw -> bronze -> silver -> gold -> warehouse) with the default settings on this
machine, and every table's build time at 200,000 orders must be <= 12x its time at 20,000
orders (a 10x step in data), or no worse than the plain script's time for the same SQL on the
same data.

For each size, in a temporary folder outside the repository (``medallion-bench-n-*`` under the
system's temp folder):

- data: a copy of the repository's project (``sql/``, ``metadata/``, ``workspace.yaml``, its
  validation rules kept: the demo as a user runs it) and ``medallion demo-data --rows N`` (the
  real CLI with its own defaults otherwise: seed 42, 3 days), made once for both sides;
- ours: ``medallion run --project <copy>`` in a fresh process with the default settings: only
  ``MEDALLION_HOME`` and ``MEDALLION_S3_LOCAL_ROOT`` point at the bench's folders
  (``shop_data.run_env``; the Spark memory and shuffle settings it would pass on are dropped).
  Each table's time is read from the run's progress lines (``[12/25] silver.orders_usd built
  200,702 rows 34.2 s``: the step's own duration), a daily table's days summed. A run that
  exits non-zero or leaves any table not "built" is a failure, printed and recorded;
- script: ``python -m bench.silver_gold script`` (one table after another, daily tables day by
  day, warehouse loads as declared, on the project's own Spark session settings) over the
  bronze our run built, its per-table seconds from its ``runs.json``. It rebuilds silver and
  gold only, so bronze tables have no script time;
- SDP: Spark Declarative Pipelines (`spark-pipelines run`, benchmark G's ``sdp-iceberg`` side)
  recomputing the project's silver and gold SQL as materialized views over the same bronze
  tables, into a copy of our lake's Iceberg catalog: whole process only (SDP prints no
  per-table times).

Every process is timed launch to exit (wall clock), and the peak RSS of its whole process tree
(the Python process, its JVM, pyspark's workers) is sampled every 0.5 s from ``/proc``
(``VmRSS`` of the process and every descendant found through the ``ppid`` of ``/proc/*/stat``);
short peaks between samples are missed. VmRSS counts a page shared by forked processes
(pyspark's daemon and its workers) in each of them, so the sum of the tree's ``Pss``
(``smaps_rollup``: a shared page split among its sharers) is printed beside it, and the
largest single process's VmRSS (the driver JVM). Our steps run two at a time (the default
workers on 2 cores), so a step's time includes waiting for the CPU its neighbour uses; the
script's do not. One repetition: at these sizes a run takes minutes to an hour.

Afterwards the raw data, the lakes and the warehouses are removed (unless ``BENCH_N_KEEP=1``);
the processes' output and Spark logs stay in the printed folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench import report
from bench.shop_data import REPO, run_env

SIZES = [int(s) for s in os.environ.get("BENCH_N_ROWS", "20000,200000").split(",") if s]
KEEP = os.environ.get("BENCH_N_KEEP", "") == "1"
TIMEOUT_S = float(os.environ.get("BENCH_N_TIMEOUT", "10800"))
BAR = 12.0  # a table's time at the largest size / at the smallest (issue 43: 200k vs 20k)
SAMPLE_S = 0.5
BIN = Path(sys.executable).parent
# Settings run_env passes on from the environment: this benchmark runs the defaults.
TUNING = ("MEDALLION_SPARK_DRIVER_MEMORY", "MEDALLION_SPARK_SHUFFLE_PARTITIONS")
# `[12/25] silver.orders_usd[2026-01-01]   built   200,702 rows   34.2 s` (rows, time optional)
PROGRESS = re.compile(
    r"^\[\s*\d+/(?P<total>\d+)\]\s+(?P<label>\S+)\s+(?P<status>not run|not built|\S+)"
    r"(?:\s+(?P<rows>[\d,]+) rows)?(?:\s+(?P<seconds>[\d.]+) s)?\s*$"
)


@dataclass
class Run:
    """One process, launch to exit."""

    side: str
    exit: int | None = None  # None: killed at the timeout
    wall: float = 0.0
    peak_tree_kb: int = 0  # the largest sum of VmRSS over the process tree, over the samples
    peak_process_kb: int = 0  # the largest single process's VmRSS (the JVM, as a rule)
    peak_pss_kb: int = 0  # the same sum of the tree's Pss (shared pages split among sharers)
    load_before: str = ""
    load_after: str = ""
    seconds: dict[str, float] = field(default_factory=dict)  # table -> build seconds
    statuses: dict[str, str] = field(default_factory=dict)  # table[day] -> status
    problems: list[str] = field(default_factory=list)  # why it is not green

    @property
    def green(self) -> bool:
        return self.exit == 0 and not self.problems


def process_tree(root: int) -> list[int]:
    """``root`` and its descendants now, from the parent ids in ``/proc/*/stat``."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # the process ended while we looked
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def memory_kb(pid: int, file: str = "status", key: str = "VmRSS") -> int:
    """``key`` of ``/proc/<pid>/<file>`` in kB (0 for a process gone or without memory, e.g. a
    zombie): ``VmRSS`` of ``status``, or ``Pss`` of ``smaps_rollup``."""
    try:
        text = Path(f"/proc/{pid}/{file}").read_text()
    except OSError:
        return 0
    found = re.search(rf"^{key}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) if found else 0


def load() -> str:
    """The load averages over 1, 5 and 15 minutes."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(
    side: str,
    command: list[str],
    env: dict[str, str],
    work: Path,
    echo: tuple[str, ...] = (),
    timeout: float = TIMEOUT_S,
) -> tuple[Run, str]:
    """Run ``command`` in a fresh process (output in ``work/<side>.log``), sampling its tree's
    memory; the run and its stdout. Lines of stdout starting with ``echo`` are printed live; past
    ``timeout`` seconds the process group is killed (a problem of the run)."""
    work.mkdir(parents=True, exist_ok=True)
    out_path, err_path = work / f"{side}.log", work / f"{side}.stderr.log"
    run = Run(side, load_before=load())
    with out_path.open("w") as out, err_path.open("w") as err, out_path.open() as reader:
        started = time.perf_counter()
        process = subprocess.Popen(
            command, stdout=out, stderr=err, env=env, cwd=work, start_new_session=True, text=True
        )
        pending = ""
        while process.poll() is None:
            tree = process_tree(process.pid)
            sizes = [memory_kb(pid) for pid in tree]
            run.peak_tree_kb = max(run.peak_tree_kb, sum(sizes))
            run.peak_process_kb = max(run.peak_process_kb, max(sizes, default=0))
            # VmRSS counts pages a forked child shares with its parent (pyspark's daemon and
            # workers) in both: the tree's Pss, beside it, counts each page once.
            pss = sum(memory_kb(pid, "smaps_rollup", "Pss") for pid in tree)
            run.peak_pss_kb = max(run.peak_pss_kb, pss)
            pending += reader.read()
            *lines, pending = pending.split("\n")
            for line in lines:
                if echo and (line.startswith(echo) or ": retrying:" in line):
                    print(f"    {side}: {line}", flush=True)
            if time.perf_counter() - started > timeout:
                os.killpg(process.pid, 9)  # the group it leads: its JVM and workers too
                process.wait()
                run.problems.append(f"killed after {timeout:.0f} s")
                break
            time.sleep(SAMPLE_S)
        run.wall = time.perf_counter() - started
    run.exit = process.returncode if not run.problems else None
    run.load_after = load()
    if run.exit not in (0, None):
        run.problems.append(f"exit {run.exit}")
    return run, out_path.read_text()


def generate(folder: Path, rows: int) -> tuple[Path, Path, Run, str]:
    """The project's copy and its raw data (``medallion demo-data --rows``, the CLI's other
    defaults); (project, s3 root, the generator's run, its summary)."""
    project, s3_root = folder / "project", folder / "s3"
    for name in ("sql", "metadata"):
        shutil.copytree(REPO / name, project / name)
    shutil.copy2(REPO / "workspace.yaml", project / "workspace.yaml")
    command = [str(BIN / "medallion"), "demo-data", "--rows", str(rows), "--project", str(project)]
    run, stdout = measure("demo-data", command, defaults(folder / "generate-home", s3_root), folder)
    if not run.green:
        raise RuntimeError(f"medallion demo-data --rows {rows} failed: {run.problems}\n{stdout}")
    return project, s3_root, run, "\n".join(stdout.strip().splitlines()[1:])


def defaults(home: Path, s3_root: Path) -> dict[str, str]:
    """``run_env`` without the Spark settings it passes on: the default settings."""
    env = run_env(home, s3_root)
    for name in TUNING:
        env.pop(name, None)
    return env


def ours(folder: Path, project: Path, s3_root: Path) -> Run:
    """``medallion run`` from an empty home; every table's seconds from its progress lines."""
    command = [str(BIN / "medallion"), "run", "--project", str(project)]
    env = defaults(folder / "home", s3_root)
    run, stdout = measure("medallion", command, env, folder, ("[", "Spark started"))
    total = None
    for line in stdout.splitlines():
        if "rows written by this run" in line:
            print(f"    medallion: {line.strip()}")
        found = PROGRESS.match(line)
        if not found:
            continue
        total = int(found["total"])
        label, status = found["label"], found["status"]
        run.statuses[label] = status
        if status != "built":
            run.problems.append(f"{label} {status}")
        if found["seconds"]:
            table = label.split("[", 1)[0]
            run.seconds[table] = run.seconds.get(table, 0.0) + float(found["seconds"])
    if total is None:
        run.problems.append("no progress lines")
    elif len(run.statuses) < total:
        run.problems.append(f"{total - len(run.statuses)} of {total} steps without a line")
    if not run.green:
        tail = "\n".join(f"      {ln}" for ln in stdout.splitlines()[-40:])
        errors = (folder / "medallion.stderr.log").read_text().splitlines()
        tail += "\n".join(["", *(f"      {ln}" for ln in errors[-20:])])
        print(f"  [FAILED] medallion run: {'; '.join(run.problems)}\n{tail}", flush=True)
    return run


def script(folder: Path, project: Path, s3_root: Path) -> Run:
    """The plain script over the bronze of our run's lake; its per-table seconds."""
    out = folder / "script"
    command = [sys.executable, "-m", "bench.silver_gold", "script", str(project)]
    command += ["--lake", str(folder / "home" / "lake"), "--out", str(out)]
    run, _ = measure("script", command, defaults(folder / "script-home", s3_root), folder)
    if run.green and (out / "runs.json").exists():
        for built in json.loads((out / "runs.json").read_text()):
            name = built["table"]
            run.seconds[name] = run.seconds.get(name, 0.0) + built["seconds"]
    elif run.green:
        run.problems.append("no runs.json (bench/silver_gold.py without per-table times)")
    if not run.green:
        errors = [
            ln
            for ln in (folder / "script.stderr.log").read_text().splitlines()
            if ln.strip() and "[Stage " not in ln
        ]
        tail = "\n".join(f"      {ln}" for ln in errors[-30:])
        print(f"  [FAILED] script: {'; '.join(run.problems)}\n{tail}", flush=True)
    return run


def sdp(folder: Path, project: Path, s3_root: Path, timeout: float = TIMEOUT_S) -> Run:
    """`spark-pipelines run` of the project's silver and gold over the lake's bronze tables,
    stopped after ``timeout`` seconds."""
    # benchmark G's SDP side: loaded only when this one runs it
    from bench import sdp_iceberg
    from bench.sdp_bench import sdp_env, spark_settings

    work = folder / "sdp"
    env = defaults(work / "home", s3_root)
    spec = sdp_iceberg.project(project, folder / "home" / "lake", work, spark_settings(env))
    sdp_env(env)
    command = [str(BIN / "spark-pipelines"), "run", "--spec", str(spec)]
    options = sdp_iceberg.server_options(env)
    run, _ = measure("sdp", [*command, *options], env, work, timeout=timeout)
    return run


def prune(folder: Path) -> None:
    """Remove the big data (raw, lakes, warehouses, Spark's scratch); keep logs and outputs."""
    for name in ("s3", "home", "script-home", "generate-home", "script", "sdp"):
        path = folder / name
        if not path.is_dir():
            continue
        for child in path.iterdir():
            if child.name != "logs" and child.suffix != ".log":
                if child.is_dir():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)


def label(rows: int) -> str:
    return f"{rows // 1000}k" if rows % 1000 == 0 else f"{rows:,}"


def main() -> None:
    print(report.heading("N. The demo at 200,000 orders with the default settings"))
    if len(SIZES) < 2:
        print(f"  BENCH_N_ROWS needs two sizes or more, got {SIZES}")
        return
    ignored = [n for n in TUNING if n in os.environ]
    if ignored:
        print(f"  ignoring {', '.join(ignored)}: this benchmark runs the default settings")
    tmp = Path(tempfile.mkdtemp(prefix="medallion-bench-n-"))
    print(f"  working folder: {tmp} (load average {load()} on {os.cpu_count()} CPUs)")
    runs: dict[int, dict[str, Run]] = {}
    try:
        for rows in SIZES:
            folder = tmp / f"rows-{rows}"
            project, s3_root, made, summary = generate(folder, rows)
            print(
                f"  raw data (medallion demo-data --rows {rows}): {made.wall:.0f} s, peak "
                f"{made.peak_tree_kb / 1024:,.0f} MB\n"
                + "\n".join("    " + ln for ln in summary.splitlines()),
                flush=True,
            )
            runs[rows] = {"demo-data": made}
            for side in (ours, script, sdp):
                done = side(folder, project, s3_root)
                runs[rows][done.side] = done
                print(
                    f"  {label(rows)} {done.side}: {done.wall:.1f} s, peak RSS "
                    f"{done.peak_tree_kb / 1024:,.0f} MB (PSS {done.peak_pss_kb / 1024:,.0f} MB), "
                    f"exit {done.exit}, "
                    f"{'green' if done.green else 'NOT GREEN'} (load {done.load_before} -> "
                    f"{done.load_after})",
                    flush=True,
                )
            if not KEEP:
                prune(folder)
    finally:
        if not KEEP:
            print(f"  big data removed; logs kept in {tmp}")
        else:
            print(f"  BENCH_N_KEEP=1: everything kept in {tmp}")
    summarize(runs)


def summarize(runs: dict[int, dict[str, Run]]) -> None:
    rows = [
        [
            label(size),
            run.side,
            run.wall,
            run.peak_tree_kb / 1024,
            run.peak_process_kb / 1024,
            run.peak_pss_kb / 1024,
            "-" if run.exit is None else str(run.exit),
            "green" if run.green else "; ".join(run.problems)[:60],
            f"{run.load_before} -> {run.load_after}",
        ]
        for size, sides in runs.items()
        for run in sides.values()
    ]
    print()
    headers = ["orders", "side", "wall s", "peak RSS MB", "largest MB", "peak PSS MB", "exit"]
    headers += ["result"]
    print(report.table([*headers, "load average"], rows))
    sizes = list(runs)
    small, large = sizes[0], sizes[-1]
    ours_small, ours_large = runs[small]["medallion"], runs[large]["medallion"]
    plain, theirs_sdp = runs[large]["script"], runs[large]["sdp"]
    layers = ["bronze", "silver", "gold"]
    tables = sorted(
        {*ours_large.seconds, *ours_small.seconds},
        key=lambda t: (layers.index(t.split(".")[0]) if t.split(".")[0] in layers else 3, t),
    )
    per_table, missed = [], []
    for table in tables:
        times = [runs[s]["medallion"].seconds.get(table) for s in sizes]
        first, last = times[0], times[-1]
        ratio = last / first if first and last is not None else None
        theirs = plain.seconds.get(table)
        if last is None or ratio is None:
            met = "no time"
        elif ratio <= BAR:
            met = "met"
        elif theirs is not None and last <= theirs:
            met = "met (script)"
        else:
            met = "MISSED"
        if met in ("MISSED", "no time"):
            missed.append(f"{table} ({'-' if ratio is None else f'{ratio:.1f}x'})")
        versus = last / theirs if last is not None and theirs else None
        per_table.append([table, *times, ratio, theirs, versus, met])
    print()
    headers = ["table", *(f"{label(s)} s" for s in sizes), f"{label(large)}/{label(small)}"]
    headers += [f"script {label(large)} s", "ours/script", f"<= {BAR:g}x or script"]
    print(report.table(headers, per_table))
    green = all(runs[s]["medallion"].green for s in sizes)
    print(
        report.verdict(
            f"the demo at {label(large)} orders runs green with the default settings",
            green,
            f"{ours_large.wall:.0f} s wall, peak {ours_large.peak_tree_kb / 1024:,.0f} MB "
            f"(script over its bronze: {plain.wall:.0f} s, {plain.peak_tree_kb / 1024:,.0f} MB; "
            f"SDP: {theirs_sdp.wall:.0f} s, {theirs_sdp.peak_tree_kb / 1024:,.0f} MB)",
        )
    )
    print(
        report.verdict(
            f"every table <= {BAR:g}x its time at {label(small)}, or <= the script's",
            not missed,
            "all tables" if not missed else "missed: " + ", ".join(missed),
        )
    )


if __name__ == "__main__":
    main()
