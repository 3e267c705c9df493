"""What `medallion run` looks at to start Spark ahead: a raw object no ingest manifest holds as
it is now. On the demo's catalog, a local folder standing in for S3 and a real control store."""

from __future__ import annotations

from medallion_assets.catalog import load_catalog
from medallion_assets.control.store import ControlStore
from medallion_assets.io.object_store import LocalFolderObjectStore
from medallion_assets.runtime.ingest.landed import landed
from tests.conftest import copy_demo_project


def test_a_new_or_changed_object_has_landed_and_ingested_ones_have_not(tmp_path):
    catalog = load_catalog(copy_demo_project(tmp_path / "shop"), use_cache=False)
    store = LocalFolderObjectStore(tmp_path / "s3")
    state = ControlStore.open(f"sqlite:///{tmp_path / 'control.db'}").state
    orders, events = catalog.sources["orders"], catalog.sources["user_events"]
    for source in catalog.sources.values():
        store.ensure_bucket(source.bucket)
    first = store.put(orders.bucket, f"{orders.prefix}batch=0001/part-00000.jsonl", b"{}\n")
    day = store.put(events.bucket, f"{events.prefix}dt=2026-01-01/part-00000.jsonl", b"{}\n")
    assert landed(catalog, store, state) == first.uri  # nothing ingested yet

    state.save_manifest("orders", None, {}, {first.key: {"etag": first.etag}})
    state.save_manifest("user_events", "2026-01-01", {}, {day.key: {"etag": day.etag}})
    assert landed(catalog, store, state) is None

    again = store.put(orders.bucket, first.key, b'{"order_id": 1}\n')  # re-exported in place
    assert landed(catalog, store, state) == again.uri
    state.save_manifest("orders", None, {}, {first.key: {"etag": again.etag}})
    new = store.put(events.bucket, f"{events.prefix}dt=2026-01-02/part-00000.jsonl", b"{}\n")
    assert landed(catalog, store, state) == new.uri
