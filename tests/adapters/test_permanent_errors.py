"""Errors that retrying cannot clear, raised by real Spark in real Dagster steps: a corrupt lake
file, a file where the staging folder should be, a folder nobody may write. Each fails its
step in one attempt, although the retry policy allows two retries, with one line that names the
path and the fix; the audit log shows no retry."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.translator import table_key
from tests.adapters.minimal import minimal_job
from tests.lake_helpers import data_files

pytestmark = pytest.mark.slow

# Two quick retries, and no project rule: the built-in classes alone must stop the retries.
POLICIES = """
retry_policies:
  quick: {max_retries: 2, delay_seconds: 0.1}
default_retry_policy: quick
"""
SILVER = "silver.orders_clean"


@pytest.fixture
def project(tmp_path, monkeypatch):
    _catalog, job, lake, plane = minimal_job(tmp_path, monkeypatch, POLICIES)
    instance = dg.DagsterInstance.ephemeral()
    assert job.execute_in_process(
        asset_selection=[table_key("bronze.orders")], instance=instance
    ).success
    return job, instance, lake, plane


def build_silver_once(project) -> tuple[str, list]:
    """Run the silver step: (its failure's message, its audit entries); it must fail without
    being retried."""
    job, instance, _lake, plane = project
    result = job.execute_in_process(
        asset_selection=[table_key(SILVER)], instance=instance, raise_on_error=False
    )
    assert not result.success
    kinds = [e.event_type_value for e in result.all_events]
    assert "STEP_UP_FOR_RETRY" not in kinds and kinds.count("STEP_FAILURE") == 1
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    description = failure.event_specific_data.user_failure_data.description
    return description, plane.store().audit(entities=[f"dataset:{SILVER}"])


def assert_one_attempt(log: list, code: str) -> None:
    assert [e.kind for e in log] == ["attempt", "error", "outcome"]
    assert log[1].details["then"] == "fail" and log[1].message.startswith(f"{SILVER}: {code}")
    assert log[2].message == f"{SILVER}: failed fast: {code}, not retried"


@pytest.mark.parametrize("damage", ["truncated", "zero bytes", "deleted"])
def test_a_corrupt_lake_file_fails_in_one_attempt_naming_it(spark, project, damage):
    """Spark alone would read a zero-byte or deleted file as no rows: the published row count
    and the files' footers must agree before a step reads a version."""
    _job, _instance, lake, _plane = project
    part = data_files(lake, lake.current("bronze.orders"))[0]
    folder = part.parent
    data = part.read_bytes()
    if damage == "deleted":
        part.unlink()
    else:
        part.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"")
    (folder / f".{part.name}.crc").unlink(missing_ok=True)  # damaged outside Spark's knowledge

    description, log = build_silver_once(project)
    assert description.startswith(
        f"{SILVER}: CORRUPT_OBJECT is permanent (built-in: corrupt_object); failing without "
        "retries: "
    )
    assert part.name in description and "Fix: the file or object named is corrupt" in description
    assert "\n" not in description and "\tat " not in description
    assert_one_attempt(log, "CORRUPT_OBJECT")


def test_a_file_where_the_staging_folder_should_be_fails_in_one_attempt(spark, project):
    _job, _instance, lake, _plane = project
    staging = lake.root / "silver" / "orders_clean" / "data"
    staging.parent.mkdir(parents=True, exist_ok=True)
    staging.write_text("not a folder")

    description, log = build_silver_once(project)
    assert "PATH_OF_WRONG_KIND is permanent (built-in: path_of_wrong_kind)" in description
    assert str(staging) in description and "move the path named aside" in description
    assert_one_attempt(log, "PATH_OF_WRONG_KIND")


@pytest.fixture
def unwritable():
    """Make a folder unwritable by this process, even as root: chmod for a normal user; for
    root, the immutable attribute (chattr +i), which stops root too. Skips when neither works
    here (root on a filesystem without the attribute)."""
    locked: list[Path] = []

    def lock(folder: Path) -> None:
        if os.geteuid() != 0:
            folder.chmod(0o555)
        elif shutil.which("chattr") is None or (
            subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0
        ):
            pytest.skip("running as root where chattr +i is not available: cannot lock a folder")
        locked.append(folder)

    yield lock
    for folder in locked:
        if os.geteuid() == 0:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)


def test_a_read_only_lake_folder_fails_in_one_attempt_with_one_line(spark, project, unwritable):
    _job, _instance, lake, _plane = project
    staging = lake.root / "silver" / "orders_clean" / "data"
    staging.mkdir(parents=True)
    unwritable(staging)  # Spark itself must create the attempt's folder in it, and cannot

    description, log = build_silver_once(project)
    assert "PATH_NOT_WRITABLE is permanent (built-in: path_not_writable)" in description
    assert str(staging) in description and "make it writable" in description
    assert "\n" not in description and "\tat " not in description and len(description) < 1000
    assert_one_attempt(log, "PATH_NOT_WRITABLE")


def test_medallion_run_lists_each_failed_table_with_its_one_line_reason(spark, project):
    from click.testing import CliRunner

    from medallion_assets.adapters.headless import run_project
    from medallion_assets.cli import cli

    _job, instance, lake, _plane = project
    root = lake.root.parents[1]
    staging = lake.root / "silver" / "orders_clean" / "data"
    staging.parent.mkdir(parents=True, exist_ok=True)
    staging.write_text("not a folder")

    summary = run_project(root, log=lambda _m: None, instance=instance)
    (failed,) = summary.having("failed")
    assert failed.table == SILVER
    assert failed.message.startswith(f"{SILVER}: PATH_OF_WRONG_KIND is permanent")
    assert str(staging) in failed.message and "\n" not in failed.message

    done = CliRunner().invoke(cli, ["run", "--project", str(root)])
    assert done.exit_code == 1
    assert "FAILED: these tables did not publish" in done.output
    assert f"  {SILVER}: PATH_OF_WRONG_KIND is permanent" in done.output  # named once


def test_names_real_spark_rejects_are_permanent_invalid_names(spark, tmp_path):
    from medallion_assets.healing.diagnosis import Failure, diagnose

    (tmp_path / "a.json").write_text('{"a": 1}\n')
    for bad in (
        lambda: spark.read.schema("`a`b` string").json(str(tmp_path)),  # a stored name, unquoted
        lambda: spark.read.json(str(tmp_path)).select("`a`b`").collect(),
    ):
        with pytest.raises(Exception) as raised:
            bad()
        diagnosis = diagnose((), Failure.of(raised.value))
        assert (diagnosis.error_code, diagnosis.permanent) == ("INVALID_NAME", True)
