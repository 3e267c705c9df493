"""The minimal project (tests/catalog/minimal_project) set up to run: a private copy with its
own MEDALLION_HOME, a local folder standing in for S3 with one orders object in it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from medallion_assets.io.object_store import LocalFolderObjectStore

MINIMAL = Path(__file__).parents[1] / "catalog" / "minimal_project"


def orders(*rows: dict[str, object]) -> bytes:
    return ("\n".join(json.dumps(r) for r in rows) + "\n").encode()


def minimal_project(
    tmp_path: Path, monkeypatch, first: dict[str, object]
) -> tuple[Path, LocalFolderObjectStore]:
    """(project root, the raw store) with ``orders/a.jsonl`` holding ``first``."""
    root = tmp_path / "project"
    shutil.copytree(MINIMAL, root)
    home = root / ".medallion"
    monkeypatch.setenv("MEDALLION_HOME", str(home))
    for name in (
        "MEDALLION_LAKE",
        "MEDALLION_S3_ENDPOINT",
        "MEDALLION_WAREHOUSE_URL",
        "MEDALLION_CONTROL_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    store = LocalFolderObjectStore(home / "s3")
    store.ensure_bucket("minimal-raw")
    store.put("minimal-raw", "orders/a.jsonl", orders(first))
    return root, store


def minimal_job(tmp_path: Path, monkeypatch, policies: str):  # type: ignore[no-untyped-def]
    """(catalog, the asset job, the lake, the control plane) of the minimal project with
    ``policies`` as its policies.yaml and one orders object in its raw store."""
    from medallion_assets.adapters.code_location import definitions_for
    from medallion_assets.adapters.translator import DatasetTranslator
    from medallion_assets.catalog import load_catalog
    from medallion_assets.control_plane import ControlPlane
    from medallion_assets.lake import Lake

    root, _store = minimal_project(
        tmp_path, monkeypatch, {"order_id": 1, "amount": 5, "country": "de"}
    )
    (root / "metadata" / "policies.yaml").write_text(policies)
    home = root / ".medallion"
    catalog = load_catalog(root, use_cache=False)
    job = definitions_for(
        catalog, DatasetTranslator(catalog)
    ).resolve_implicit_global_asset_job_def()
    plane = ControlPlane.from_env({"MEDALLION_HOME": str(home)}, root)
    return catalog, job, Lake.local(home / "lake"), plane
