"""A raw folder whose day cannot be a partition of its daily table (not a calendar day, in the
future, before the table's ``partitions.start``) is left out, named and audited; the run takes
every other day."""

from __future__ import annotations

from pathlib import Path

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.headless import raw_partitions
from medallion_assets.adapters.translator import DatasetTranslator
from medallion_assets.catalog import load_catalog
from medallion_assets.io.object_store import LocalFolderObjectStore
from tests.conftest import copy_demo_project


def test_odd_day_folders_are_left_out_and_named_and_the_other_days_kept(
    tmp_path: Path, monkeypatch
):
    root = copy_demo_project(tmp_path / "theworldshop")
    home = root / ".medallion"
    for name in ("MEDALLION_LAKE", "MEDALLION_S3_ENDPOINT", "MEDALLION_CONTROL_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEDALLION_HOME", str(home))
    store = LocalFolderObjectStore(home / "s3")
    store.ensure_bucket("theworldshop-raw")
    for day in ("2026-01-02", "2026-02-30", "2030-06-01", "2025-06-01", "2026-01-03"):
        store.put("theworldshop-raw", f"user_events/dt={day}/part-0.jsonl", b"{}\n")
    catalog = load_catalog(root, use_cache=False)
    defs = definitions_for(catalog, DatasetTranslator(catalog))
    told: list[tuple[str, str]] = []

    days = raw_partitions(catalog, defs, lambda entity, why: told.append((entity, why)))

    assert days == ["2026-01-02", "2026-01-03"]
    assert [e for e, _ in told] == ["source:user_events"] * 3
    whys = "\n".join(w for _, w in told)
    assert (
        "day 2025-06-01 under s3://theworldshop-raw/user_events/ for bronze.user_events: "
        "before the table's partitions.start 2026-01-01" in whys
    )
    assert "day 2026-02-30" in whys and "not a day of the calendar" in whys
    assert "day 2030-06-01" in whys and "in the future (today is " in whys
