"""Benchmark G's side ``folder-lake``: the project's own `medallion run` as it was before the lake
moved to Iceberg (commit ``9f93b34``, pyspark 4.3.0: every table a folder of versions,
``versions/<id>/part-*.parquet``, and a ``CURRENT`` pointer), on the same raw data and project.

Installed once per machine, off the clock: ``git archive 9f93b34`` of this repository unpacked
into ``~/.cache/medallion-bench/folder-lake-9f93b34/src`` (``BENCH_G_FOLDER_LAKE_CACHE`` moves
it; no worktree, the repository's metadata is left alone), a virtualenv beside it and
``pip install -e`` of that tree (its pyproject pins pyspark 4.3.0 and pandas<3). Every run uses
that virtualenv's own ``medallion`` CLI, its own ``MEDALLION_HOME``, and no ``PYTHONPATH`` into
this repository (which would import today's package instead). When the old version cannot be
installed or run here, ``install`` says why in one line and the side is left out.

Its sql/ and metadata/ are the same as today's (unchanged since 9f93b34), so it runs the
benchmark's project copy (rules dropped) over the same raw folder. Its bronze-only template is
the old benchmark's: a full run into a ``MEDALLION_HOME``, then the lake's silver and gold
folders, the Dagster home and the warehouse removed (the control store keeps its records; the
lake has no current version of them, so the next run builds them). Outputs for the checker:
each silver/gold table's (each day's) ``CURRENT`` version's parquet files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.shop_data import REPO, run_env

COMMIT = "9f93b34"
CACHE = Path(
    os.environ.get(
        "BENCH_G_FOLDER_LAKE_CACHE",
        str(Path.home() / ".cache" / "medallion-bench" / f"folder-lake-{COMMIT}"),
    )
)
INSTALL_TIMEOUT_S = 1800


def install() -> tuple[Path | None, str]:
    """(the old version's ``medallion`` CLI, "") or (None, one line saying why there is none)."""
    venv, source, stamp = CACHE / "venv", CACHE / "src", CACHE / ".installed"
    cli = venv / "bin" / "medallion"
    if stamp.is_file() and cli.is_file():
        return cli, ""
    try:
        shutil.rmtree(CACHE, ignore_errors=True)
        source.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", COMMIT], capture_output=True, check=False
        )
        if archive.returncode != 0:
            return None, f"git archive {COMMIT} failed: {_last_line(archive.stderr)}"
        _step(["tar", "-x", "-C", str(source)], archive.stdout)
        uv = Path(sys.executable).parent / "uv"
        if uv.is_file():
            _step([str(uv), "venv", "--python", sys.executable, str(venv)])
            python = str(venv / "bin" / "python")
            _step([str(uv), "pip", "install", "--python", python, "-e", str(source)])
        else:
            _step([sys.executable, "-m", "venv", str(venv)])
            _step([str(venv / "bin" / "python"), "-m", "pip", "install", "-e", str(source)])
        _step([str(cli), "run", "--help"], env=old_env(os.environ.copy()))
    except (OSError, subprocess.SubprocessError, RuntimeError) as error:
        return None, f"installing {COMMIT} failed: {_last_line(str(error).encode())}"
    stamp.write_text(COMMIT + "\n", encoding="utf-8")
    return cli, ""


def _step(
    command: list[str], stdin: bytes | None = None, env: dict[str, str] | None = None
) -> None:
    done = subprocess.run(
        command, input=stdin, capture_output=True, env=env, check=False, timeout=INSTALL_TIMEOUT_S
    )
    if done.returncode != 0:
        raise RuntimeError(f"{Path(command[0]).name}: {_last_line(done.stderr or done.stdout)}")


def _last_line(text: bytes) -> str:
    lines = [ln.strip() for ln in text.decode(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def old_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without this repository on ``PYTHONPATH`` (the old CLI imports its own tree)."""
    kept = [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != REPO
    ]
    env.pop("PYTHONPATH", None)
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    return env


def run_environment(home: Path, s3_root: Path) -> dict[str, str]:
    """One old run's environment: its own MEDALLION_HOME and DAGSTER_HOME, the shared raw data."""
    env = old_env(run_env(home, s3_root))
    env["DAGSTER_HOME"] = str(home / "dagster")
    return env


def template_home(tmp: Path, data: Any, cli: Path) -> Path:
    """The old version's MEDALLION_HOME holding bronze only (see the module's docstring)."""
    home = tmp / "folder-lake-template"
    command = [str(cli), "run", "--project", str(data.project)]
    done = subprocess.run(
        command,
        env=run_environment(home, data.s3_root),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"bronze run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    for folder in ("lake/silver", "lake/gold", "dagster"):
        shutil.rmtree(home / folder, ignore_errors=True)
    for name in ("warehouse.duckdb", "warehouse.duckdb.wal"):
        (home / name).unlink(missing_ok=True)
    return home


def prepare_run(
    work: Path, data: Any, template: Path, cli: Path
) -> tuple[list[str], dict[str, str]]:
    """A copy of the template home in ``work/home``; the run's command and environment."""
    shutil.copytree(template, work / "home")
    command = [str(cli), "run", "--project", str(data.project)]
    return command, run_environment(work / "home", data.s3_root)


def outputs(lake_root: Path, catalog: Any) -> dict[str, list[str]]:
    """Silver/gold table -> the parquet files of its current version (of every day), read
    from the folder lake's layout: ``<layer>/<table>[/partitions/<day>]/CURRENT`` names the
    version, ``versions/<version>/part-*.parquet`` hold it."""
    found: dict[str, list[str]] = {}
    for name, dataset in catalog.datasets.items():
        if dataset.layer == "bronze":
            continue
        base = lake_root.joinpath(*name.split(".", 1))
        days = base / "partitions"
        folders = sorted(days.iterdir()) if days.is_dir() else [base]
        files: list[str] = []
        for folder in folders:
            pointer = folder / "CURRENT"
            if pointer.is_file():
                version = json.loads(pointer.read_text(encoding="utf-8"))["version"]
                files += sorted(
                    str(p) for p in (folder / "versions" / version).glob("part-*.parquet")
                )
        found[name] = files
    return found
