"""``medallion control`` and ``medallion audit`` on TheWorldShop, against the embedded SQLite
store and a real PostgreSQL server: flags flip without touching control.yaml, the status says
who, since when and why, control.yaml edits are read at once, and the audit log answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.cli.conftest import medallion


def test_disable_status_enable_and_audit(project: Path):
    yaml_before = (project / "metadata" / "control.yaml").read_text()
    done = medallion(
        project, "control", "disable", "source:orders", "--reason", "S3 SlowDown", "--by", "oncall"
    )
    assert done.exit_code == 0, done.output
    assert "source:orders disabled by oncall" in done.output
    assert "switched off: bronze.orders" in done.output
    status = medallion(project, "control", "status")
    assert "DISABLED source:orders  by oncall since 20" in status.output
    assert "(control store): S3 SlowDown" in status.output
    assert "switches off: bronze.orders" in status.output
    as_json = json.loads(medallion(project, "control", "status", "--format", "json").output)
    assert as_json["disabled_tables"] == {"bronze.orders": "source:orders"}

    assert (
        medallion(
            project, "control", "enable", "source:orders", "--reason", "quiet", "--by", "oncall"
        ).exit_code
        == 0
    )
    assert "nothing is disabled" in medallion(project, "control", "status").output
    assert (project / "metadata" / "control.yaml").read_text() == yaml_before  # store only

    log = medallion(project, "audit", "--dataset", "bronze.orders").output
    assert "source:orders disabled by oncall: S3 SlowDown" in log
    assert "source:orders enabled by oncall: quiet" in log
    assert (
        medallion(project, "audit", "--dataset", "gold.customer_ltv").output.strip()
        == "no audit entries match"
    )
    entries = json.loads(medallion(project, "audit", "--since", "1h", "--format", "json").output)
    assert [e["details"]["enabled"] for e in entries] == [False, True]


def test_a_control_yaml_edit_counts_at_once_and_the_store_overrides_it(project: Path):
    control = project / "metadata" / "control.yaml"
    control.write_text(
        control.read_text().replace(
            "name: gold.fraud_features\n    enabled: true",
            "name: gold.fraud_features\n    enabled: false",
        )
    )
    status = medallion(project, "control", "status").output
    assert "DISABLED dataset:gold.fraud_features  by risk-ml@theworldshop.example" in status
    assert "(control.yaml)" in status
    medallion(
        project, "control", "enable", "gold.fraud_features", "--reason", "override", "--by", "me"
    )
    assert "nothing is disabled" in medallion(project, "control", "status").output


def test_unknown_entities_and_bad_times_are_refused_with_the_fix(project: Path):
    typo = medallion(project, "control", "disable", "dataset:gold.fraud_feature", "--reason", "x")
    assert typo.exit_code == 2 and "did you mean gold.fraud_features" in typo.output
    scope = medallion(project, "control", "disable", "table:gold.fraud_features", "--reason", "x")
    assert (
        scope.exit_code == 2
        and "SCOPE one of pipeline, layer, dataset, source, target" in scope.output
    )
    assert (
        medallion(project, "control", "disable", "source:orders").exit_code == 2
    )  # --reason required
    since = medallion(project, "audit", "--since", "yesterday")
    assert since.exit_code == 2 and "neither an age (30m, 6h, 2d) nor an ISO time" in since.output


def test_catalog_export_writes_the_seed_tables_and_replaces_them(project: Path, demo_catalog):
    from medallion_assets.control_plane import ControlPlane

    medallion(project, "control", "disable", "layer:gold", "--reason", "close", "--by", "fin")
    done = medallion(project, "catalog", "export")
    assert done.exit_code == 0, done.output
    store = ControlPlane.from_env(os.environ, project).store()

    def count(table: str) -> int:
        return store.query(f"SELECT count(*) FROM {table}")[0][0]

    assert count("stages") == len(demo_catalog.datasets)
    assert count("sources") == len(demo_catalog.sources)
    assert count("targets") == len(demo_catalog.targets)
    assert count("pipelines") == len(demo_catalog.pipelines)
    assert count("retry_policies") == len(demo_catalog.retry_policies)
    assert count("healing_actions") == len(demo_catalog.healing_rules)
    assert count("dataset_lineage") == len(list(demo_catalog.lineage.dag.edges()))
    assert count("validation_rules") == sum(len(d.rules) for d in demo_catalog.datasets.values())
    (gold,) = store.query(
        "SELECT enabled, origin, changed_by FROM control_flags WHERE scope = 'layer'"
    )
    assert (bool(gold[0]), gold[1], gold[2]) == (False, "control store", "fin")
    (edge,) = store.query(
        "SELECT columns FROM dataset_lineage WHERE upstream = :up AND downstream = :down",
        {"up": "silver.orders_usd", "down": "gold.revenue_by_region"},
    )
    assert json.loads(edge[0])  # column-level detail of the edge
    (rule,) = store.query(
        "SELECT kind, blocking FROM validation_rules WHERE dataset = :dataset AND name = :name",
        {"dataset": "silver.addresses_validated", "name": "iso_country_code"},
    )
    assert rule[0] == "accepted_values" and bool(rule[1])
    assert f"{len(demo_catalog.datasets)} row(s)" in done.output

    assert medallion(project, "catalog", "export").exit_code == 0  # replaced, not appended
    assert count("stages") == len(demo_catalog.datasets)
    assert [e.kind for e in store.audit(entities=["catalog"])] == ["export", "export"]


def test_status_shows_the_runtime_state_in_force(project: Path):
    import time

    from medallion_assets.control.state import LoadRecord
    from medallion_assets.control_plane import ControlPlane
    from medallion_assets.runtime.ingest.schema_drift import evolve

    empty = medallion(project, "control", "status", "--format", "json")
    assert empty.exit_code == 0, empty.output
    for key in ("routes", "throttle_cuts", "evolved_schemas", "ingest_manifests", "loads"):
        assert json.loads(empty.output)[key] == []
    state = ControlPlane.from_env(os.environ, project).state()
    now = time.time()
    state.cut_throttle("s3_raw", now, "S3_THROTTLED in bronze.orders", "run-1")
    state.cut_throttle("warehouse", now - 7200, "long ago")  # expired: not in force
    evolve(state, "orders", ["coupon", "gift"], "run-1")
    entry = {"etag": "e", "batch_id": "run-1", "ingested_at": 1767225600.0}
    state.save_manifest("user_events", "2026-01-01", {}, {"a": entry, "b": entry}, "run-1")
    state.record_load(
        LoadRecord(
            "gold.revenue_by_region", None, "v1", "analytics.rev", "replace", 7, "abcdef1234"
        )
    )

    text = medallion(project, "control", "status").output
    assert "THROTTLED s3_raw  limits at 0.5x until 20" in text
    assert "S3_THROTTLED in bronze.orders" in text and "warehouse" not in text
    assert "EVOLVED  source orders: coupon, gift" in text
    assert (
        "INGESTED source user_events [2026-01-01]: 2 object(s), last at 2026-01-01T00:00:00" in text
    )
    assert "LOADED   gold.revenue_by_region version v1 into analytics.rev (replace, 7 rows)" in text
    assert text.rstrip().endswith("by run abcdef12")
    data = json.loads(medallion(project, "control", "status", "--format", "json").output)
    assert [(c["system"], c["factor"]) for c in data["throttle_cuts"]] == [("s3_raw", 0.5)]
    assert data["evolved_schemas"] == [{"source": "orders", "added_columns": ["coupon", "gift"]}]
    assert data["ingest_manifests"] == [
        {
            "source": "user_events",
            "partition": "2026-01-01",
            "objects": 2,
            "last_ingested": "2026-01-01T00:00:00.000000Z",
        }
    ]
    (load,) = data["loads"]
    assert (load["dataset"], load["rows"], load["run_id"]) == (
        "gold.revenue_by_region",
        7,
        "abcdef1234",
    )


def test_the_first_command_moves_an_earlier_versions_state_files_into_the_store(project: Path):
    legacy = project / ".medallion" / "lake" / "_state"
    legacy.mkdir(parents=True)
    manifest = {
        f"orders/{i}.jsonl": {"etag": f"e{i}", "ingested_at": 1767225600.0 + i} for i in range(3)
    }
    (legacy / "manifest__orders.json").write_text(json.dumps(manifest))
    (legacy / "schema__orders.json").write_text(json.dumps({"columns": [{"name": "coupon"}]}))

    status = medallion(project, "control", "status")
    assert status.exit_code == 0, status.output
    assert "INGESTED source orders: 3 object(s), last at 2026-01-01T00:00:02" in status.output
    assert "EVOLVED  source orders: coupon" in status.output
    assert not legacy.exists()
    assert (project / ".medallion" / "lake" / "_state.imported" / "manifest__orders.json").is_file()
    log = json.loads(medallion(project, "audit", "--format", "json").output)
    assert [e["details"]["files"] for e in log if e["kind"] == "state"] == [
        ["manifest__orders.json", "schema__orders.json"]
    ]


def test_a_profile_override_is_audited_shown_and_cleared(project: Path):
    before = medallion(project, "control", "profile")
    assert before.exit_code == 0, before.output
    assert "core_daily               focus (profiles.yaml: pipeline_profiles.core_daily)" in (
        before.output
    )
    assert "fraud                    balanced (profiles.yaml: active)" in before.output

    set_all = medallion(
        project, "control", "profile", "all", "focus", "--reason", "month close", "--by", "lead"
    )
    assert set_all.exit_code == 0, set_all.output
    assert "fraud                    focus (control store override for all pipelines)" in (
        set_all.output
    )
    own = medallion(
        project, "control", "profile", "fraud", "balanced", "--reason", "100% fine", "--by", "x"
    )
    assert "fraud                    balanced (control store override)" in own.output
    status = medallion(project, "control", "status")
    assert "PROFILE  all -> focus  by lead since 20" in status.output
    as_json = json.loads(medallion(project, "control", "profile", "--format", "json").output)
    assert as_json["overrides"] == {"all": "focus", "fraud": "balanced"}

    for pipeline in ("all", "fraud"):
        cleared = medallion(project, "control", "profile", pipeline, "default", "--reason", "ok?")
        assert cleared.exit_code == 0, cleared.output
    assert medallion(project, "control", "profile").output == before.output
    log = medallion(project, "audit", "--since", "1h").output
    assert "pipeline:all: every pipeline put in profile focus by lead: month close" in log
    assert "pipeline fraud put in profile balanced by x: 100% fine" in log
    assert "every pipeline back to its profiles.yaml profile" in log


def test_a_profile_override_needs_a_known_pipeline_a_known_profile_and_a_reason(project: Path):
    unknown = medallion(project, "control", "profile", "nope", "focus", "--reason", "x")
    assert unknown.exit_code == 2 and "unknown pipeline 'nope'" in unknown.output
    bad = medallion(project, "control", "profile", "fraud", "turbo", "--reason", "x")
    assert bad.exit_code == 2 and "unknown profile 'turbo'" in bad.output
    assert "balanced, focus" in bad.output
    silent = medallion(project, "control", "profile", "fraud", "focus")
    assert silent.exit_code == 2 and "--reason" in silent.output
    assert "PROFILE" not in medallion(project, "control", "status").output
