"""docs/s3.md's local S3 stand-in, run exactly as the page writes it: its server command, then
its shell lines in a copy of the demo, with nothing set but what the page sets (no MEDALLION_*
or AWS_* variable of the machine, no credentials file). The lake starts on an empty S3 API and
ends with every table in the catalog, on S3."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from medallion_assets.catalog import load_catalog
from tests.conftest import REPO, copy_demo_project

pytestmark = pytest.mark.slow

PAGE = REPO / "docs" / "s3.md"
VENV_BIN = Path(sys.executable).parent


def recipe() -> tuple[str, str]:
    """The stand-in's server command and the shell lines that use it."""
    section = PAGE.read_text().split("## A local S3 stand-in", 1)[1].split("\n## ", 1)[0]
    server, shell = re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
    return server.strip(), shell


def _wait_for(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def test_the_demo_runs_on_the_pages_s3_stand_in_from_an_empty_endpoint(tmp_path: Path):
    server_command, shell = recipe()
    assert server_command.startswith(".venv/bin/moto_server -H 127.0.0.1 ")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEDALLION_", "AWS_", "DAGSTER_")) and k != "PYTHONPATH"
    }
    env |= {
        "PATH": f"{VENV_BIN}{os.pathsep}{env['PATH']}",  # the virtualenv active, as the page says
        # no credentials of this machine's: only the page's
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    (tmp_path / ".venv").symlink_to(VENV_BIN.parent)  # `.venv/bin/...` from the page's folder
    server = subprocess.Popen(
        ["bash", "-c", f"exec {server_command}"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _wait_for("http://127.0.0.1:9000/")
        project = copy_demo_project(tmp_path / "theworldshop")
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", shell],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "Traceback" not in out
    assert "was created (MEDALLION_LAKE_CREATE=1) and takes writes" in done.stdout
    tally = re.search(r"^(\d+) built(.*); [\d,]+ rows? written", done.stdout, re.MULTILINE)
    assert tally is not None and "failed" not in tally.group(2), done.stdout[-3000:]
    rows = re.findall(r"^([a-z]\w*\.\w+)\s+\S+\s+built\s", done.stdout, re.MULTILINE)
    built = set(rows)  # the summary table's rows (a daily table has one per day)
    assert built == set(load_catalog(project).datasets)  # every table, on S3
