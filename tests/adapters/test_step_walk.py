"""A table's run from the executor to its Iceberg catalog commit is at most ten calls of the
project's own code (docs/layout.md walks them), over two folders: the Dagster adapters and the
runtime."""

from __future__ import annotations

import traceback
from pathlib import Path

import dagster as dg
import pytest

from medallion_assets.adapters.code_location import definitions_for
from medallion_assets.adapters.translator import DatasetTranslator
from medallion_assets.catalog import load_catalog
from medallion_assets.lake import Lake
from tests.adapters.minimal import minimal_project

PACKAGE = Path(__file__).resolve().parents[2] / "medallion_assets"


@pytest.mark.slow
def test_a_tables_run_reaches_its_catalog_commit_in_ten_calls(spark, tmp_path, monkeypatch):
    root, _store = minimal_project(tmp_path, monkeypatch, {"order_id": 1, "amount": 5})
    walks: dict[str, list[str]] = {}
    publish = Lake.publish

    def spied(self, spark, staged, *args, **kwargs):  # type: ignore[no-untyped-def]
        walks.setdefault(
            staged.write.table,
            [
                f"{Path(f.filename).relative_to(PACKAGE).as_posix()} {f.name}"
                for f in traceback.extract_stack()[:-1]
                if Path(f.filename).is_relative_to(PACKAGE)
            ],
        )
        return publish(self, spark, staged, *args, **kwargs)

    monkeypatch.setattr(Lake, "publish", spied)
    catalog = load_catalog(root, use_cache=False)
    job = definitions_for(catalog, DatasetTranslator(catalog)).resolve_job_def("daily")
    assert job.execute_in_process(instance=dg.DagsterInstance.ephemeral()).success

    walk = walks["gold.revenue"]
    assert len(walk) + 1 <= 10, "\n".join(walk)  # + Lake.publish, the commit
    assert walk[0] == "adapters/masking.py step"  # the asset's body, as the executor calls it
    assert walk[-1] == "runtime/table_build.py publish_checked"
    assert {frame.split("/")[0] for frame in walk} == {"adapters", "runtime"}
