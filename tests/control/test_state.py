"""The runtime state in the control store on SQLite and on a real PostgreSQL server: throttle
cuts, evolved columns, ingest manifests (a row per object, thousands of them) and warehouse
loads, each change audited; values holding ``?`` and ``%`` round-trip; two processes writing
at once lose nothing; and the ``_state`` JSON files of an earlier version move in once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medallion_assets.control.legacy_state import IMPORTED_FOLDER
from medallion_assets.control.state import LoadRecord
from medallion_assets.control.store import ControlStore
from medallion_assets.control_plane import ControlPlane
from medallion_assets.runtime.ingest.schema_drift import evolve, read_evolved, revert
from tests.control_store import in_processes

ODD = "50% done? yes: %s %(x)s ?? 100%"  # placeholders of both drivers, literally


def test_values_with_placeholder_characters_round_trip(url: str):
    store = ControlStore.open(url)
    store.set_flag("dataset", "gold.x?", False, ODD, "on%call?")
    store.record("error", "dataset:gold.x?", ODD, "r?%", {"why": ODD})
    store.set_route("silver.y%", "alt?", ODD, "oncall")
    (flag,) = store.flags()
    assert (flag.name, flag.reason, flag.changed_by) == ("gold.x?", ODD, "on%call?")
    assert store.routes()["silver.y%"].reason == ODD
    (_flag, entry, _route) = store.audit()
    assert (entry.message, entry.run_id, entry.details) == (ODD, "r?%", {"why": ODD})
    assert store.audit(entities=["dataset:gold.x?"], run_id="r?%") == [entry]
    rows = store.query(
        "SELECT reason FROM control_flag_overrides WHERE name = :n", {"n": "gold.x?"}
    )
    assert rows == [(ODD,)]


def test_throttle_cuts_halve_expire_and_are_audited(url: str):
    state = ControlStore.open(url).state
    assert state.throttle_factor("s3_raw", 1000.0) == 1.0
    assert state.cut_throttle("s3_raw", 1000.0, "S3_THROTTLED", "r1").factor == 0.5
    assert state.cut_throttle("s3_raw", 1001.0, "S3_THROTTLED", "r1").factor == 0.25
    state.cut_throttle("warehouse", 1001.0, ODD, "r2")
    assert state.throttle_factor("s3_raw", 1001.0 + 3600) == 0.25  # held an hour from the last
    assert state.throttle_factor("s3_raw", 1001.0 + 3601) == 1.0
    assert state.cut_throttle("s3_raw", 9000.0, "again").factor == 0.5  # an expired cut restarts
    assert [(c.system, c.factor, c.until) for c in state.throttle_cuts()] == [
        ("s3_raw", 0.5, 12600.0),
        ("warehouse", 0.5, 4601.0),
    ]
    audit = [(e.kind, e.entity, e.details["factor"]) for e in state.store.audit()]
    assert audit == [
        ("throttle", "system:s3_raw", 0.5),
        ("throttle", "system:s3_raw", 0.25),
        ("throttle", "system:warehouse", 0.5),
        ("throttle", "system:s3_raw", 0.5),
    ]


def test_evolved_columns_are_added_once_reverted_and_audited(url: str):
    state = ControlStore.open(url).state
    assert evolve(state, "orders", {"coupon": ["a.jsonl"], "note%?": ["b.jsonl"]}, "r1") == [
        "coupon",
        "note%?",
    ]
    assert evolve(state, "orders", ["COUPON", "gift"], "r2") == ["gift"]
    assert [(c.name, c.run_id, c.files) for c in read_evolved(state, "orders")] == [
        ("coupon", "r1", ("a.jsonl",)),
        ("note%?", "r1", ("b.jsonl",)),
        ("gift", "r2", ()),
    ]
    assert revert(state, "orders", ["coupon"], ODD, "oncall") == ["coupon"]
    assert [c.name for c in read_evolved(state, "orders")] == ["note%?", "gift"]
    assert evolve(state, "orders", ["coupon"], "r3") == ["coupon"]  # back, last in order
    assert [c.name for c in read_evolved(state, "orders")] == ["note%?", "gift", "coupon"]
    entries = [e for e in state.store.audit(["source:orders"])]
    assert [e.details.get("added", e.details.get("reverted")) for e in entries] == [
        ["coupon", "note%?"],
        ["gift"],
        ["coupon"],
        ["coupon"],
    ]
    assert (
        entries[2].message == f"evolved column(s) coupon of source orders reverted by oncall: {ODD}"
    )


def test_a_manifest_is_a_row_per_object_and_only_changes_are_written(url: str):
    state = ControlStore.open(url).state
    manifest = {
        f"events/dt=2026-01-01/part-{i:05d}.jsonl": {
            "etag": f"e{i}",
            "batch_id": "r1",
            "ingested_at": 1000.0 + i,
            "landing": f"/landing/{i}",
        }
        for i in range(3000)
    }
    assert state.save_manifest("events", "2026-01-01", {}, manifest, "r1") == 3000
    assert state.manifest("events", "2026-01-01") == manifest
    assert state.manifest("events", None) == {} and state.manifest("events", "2026-01-02") == {}
    count = "SELECT count(*) FROM ingest_manifest WHERE source = :s"
    assert state.store.query(count, {"s": "events"}) == [(3000,)]

    changed = dict(manifest)
    first = next(iter(manifest))
    changed[first] = {**manifest[first], "etag": "new", "batch_id": "r2", "ingested_at": 9000.0}
    changed["events/dt=2026-01-01/odd?%.jsonl"] = {"etag": "x", "quarantined": ODD}
    del changed["events/dt=2026-01-01/part-00001.jsonl"]
    assert state.save_manifest("events", "2026-01-01", manifest, changed, "r2") == 2
    assert state.manifest("events", "2026-01-01") == changed
    assert state.save_manifest("events", "2026-01-01", changed, changed, "r3") == 0
    (summary,) = state.manifests()
    assert (summary.source, summary.partition, summary.objects) == ("events", "2026-01-01", 3000)
    assert summary.last_ingested == 9000.0
    entries = state.store.audit(["source:events"])
    assert [(e.kind, e.run_id, e.details["objects"]) for e in entries] == [
        ("ingest", "r1", 3000),
        ("ingest", "r2", 2),
    ]


def test_loads_are_recorded_and_the_latest_per_table_and_partition_is_shown(url: str):
    state = ControlStore.open(url).state
    load = LoadRecord("gold.sales", "2026-01-01", "v1", "analytics.sales", "merge", 10, "r1")
    assert state.record_load(load)
    assert state.record_load(
        LoadRecord("gold.sales", "2026-01-01", "v2", "analytics.sales", "merge", 12, "r2")
    )
    assert state.record_load(
        LoadRecord("gold.totals", None, "v7", "analytics.totals", "replace", 3, "r2")
    )
    # Found already loaded by the warehouse's ledger: recorded only when the store missed it.
    assert not state.record_load(
        LoadRecord("gold.totals", None, "v7", "analytics.totals", "replace", 3, "r3"), held=True
    )
    assert state.record_load(
        LoadRecord("gold.totals", None, "v8", "analytics.totals", "replace", 4, "r4"), held=True
    )
    latest = [
        (x.dataset, x.partition, x.lake_version, x.rows, x.run_id) for x in state.latest_loads()
    ]
    assert latest == [
        ("gold.sales", "2026-01-01", "v2", 12, "r2"),
        ("gold.totals", None, "v8", 4, "r4"),
    ]
    messages = [e.message for e in state.store.audit(["dataset:gold.totals"])]
    assert messages == [
        "loaded 3 row(s) of gold.totals version v7 into analytics.totals (replace)",
        "loaded 4 row(s) of gold.totals version v8 into analytics.totals (replace), "
        "recorded after the fact",
    ]


def _write_state(url: str, worker: int, count: int) -> None:
    state = ControlStore.open(url).state
    before: dict[str, dict[str, object]] = {}
    for i in range(count):
        after = {**before, f"w{worker}/{i}": {"etag": str(i), "batch_id": f"w{worker}"}}
        state.save_manifest("shared", None, before, after, f"w{worker}")
        before = after
        state.cut_throttle("s3_raw", 1000.0 + i, f"w{worker}", f"w{worker}")
        evolve(state, "orders", [f"c{worker}_{i}"], f"w{worker}")


@pytest.mark.slow  # spawns processes that import the package
def test_two_processes_writing_state_at_once_lose_nothing(url: str):
    ControlStore.open(url)
    count = 15
    in_processes(_write_state, [(url, w, count) for w in range(2)])
    state = ControlStore(url).state
    assert sorted(state.manifest("shared", None)) == sorted(
        f"w{w}/{i}" for w in range(2) for i in range(count)
    )
    assert len(read_evolved(state, "orders")) == 2 * count
    cuts = [e for e in state.store.audit() if e.kind == "throttle"]
    assert len(cuts) == 2 * count
    assert [c.factor for c in state.throttle_cuts()] == [0.125]  # halved 30 times, floored


def test_state_files_of_an_earlier_version_move_into_the_store_once(tmp_path: Path, url: str):
    lake = tmp_path / "lake"
    legacy = lake / "_state"
    legacy.mkdir(parents=True)
    files = {
        "parallelism__s3_raw": {"factor": 0.25, "until": 4e9, "since": 1e9},
        "schema__orders": {"columns": [{"name": "coupon", "run_id": "r0", "files": ["a.jsonl"]}]},
        "manifest__orders": {"orders/a.jsonl": {"etag": "e1", "batch_id": "r0", "ingested_at": 5}},
        "manifest__user_events__2026-01-01": {"events/dt=2026-01-01/x.jsonl": {"etag": "e2"}},
        "manifest__odd__name": {"k": {"etag": "e3"}},
    }
    for name, data in files.items():
        (legacy / f"{name}.json").write_text(json.dumps(data))
    (legacy / "unknown.json").write_text("{}")
    store = ControlStore.open(url)
    state = store.state
    evolve(state, "orders", ["gift"], "r9")  # the store already has state: it is kept
    plane = ControlPlane(tmp_path, url, lake_root=lake)
    assert plane.state() is plane.store().state

    assert not legacy.exists() and (lake / IMPORTED_FOLDER / "unknown.json").is_file()
    assert state.throttle_factor("s3_raw", 2e9) == 0.25
    assert [c.name for c in read_evolved(state, "orders")] == ["gift", "coupon"]
    assert state.manifest("orders", None) == files["manifest__orders"]
    assert state.manifest("user_events", "2026-01-01") == {
        "events/dt=2026-01-01/x.jsonl": {"etag": "e2"}
    }
    assert state.manifest("odd__name", None) == {"k": {"etag": "e3"}}
    (entry,) = [e for e in store.audit() if e.kind == "state"]
    assert len(entry.details["files"]) == 5 and "imported 5 state file(s)" in entry.message

    # Once: a later plane finds no _state folder and changes nothing.
    ControlPlane(tmp_path, url, lake_root=lake).store()
    assert len([e for e in store.audit() if e.kind == "state"]) == 1
