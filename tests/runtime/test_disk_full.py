"""The disk under the lake filling up during a write, on a real (1 MB) tmpfs: the ingest
fails, publishing nothing, and the failure is classified DISK_FULL (permanent: no backoff),
naming what to free."""

from __future__ import annotations

import json
import os
import random
import subprocess

import pytest

from medallion_assets.healing.diagnosis import Failure, diagnose
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.lake import Lake
from tests.runtime.test_ingest_bad_input import Project, bucket

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path):
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_lake_on_a_full_disk_fails_the_ingest_as_disk_full_publishing_nothing(
    spark, tmp_path, small_disk
):
    project = Project(tmp_path, LocalFolderObjectStore(tmp_path / "s3"), bucket(), "jsonl")
    project.lake = Lake.local(small_disk / "lake")
    noise = random.Random(7)
    for part in range(3):  # ~7 MB of text, over 2 MB as Parquet
        records = [
            {"order_id": part * 10_000 + i, "amount": 1, "country": os.urandom(40).hex()}
            for i in range(noise.randint(9_000, 10_000))
        ]
        project.put(f"orders/{part}.jsonl", "".join(json.dumps(r) + "\n" for r in records).encode())

    with pytest.raises(Exception) as failed:
        project.run(spark, "r1")

    diagnosis = diagnose((), Failure.of(failed.value))
    assert (diagnosis.error_code, diagnosis.then) == ("DISK_FULL", "fail"), Failure.of(
        failed.value
    ).summary
    assert project.lake.current("bronze.orders") is None
    assert project.state.manifest("orders", None) == {}  # nothing recorded as ingested
