"""Recovery applied through the control store, on TheWorldShop and each store the CLI runs on:
a node marked down, a source switched off or a node given for one decision moves every table
that needs it to its cheapest available path (audited with the path), readers keep their route,
an operator's route stays, and the tables go back when the node is up again."""

from __future__ import annotations

import json
import os
from pathlib import Path

from medallion_assets.catalog import load_catalog
from medallion_assets.control_plane import ControlPlane
from medallion_assets.recovery.recover import RECOVERY, DownNodes
from tests.cli.conftest import medallion


def plane_of(project: Path) -> ControlPlane:
    return ControlPlane.from_env(dict(os.environ), project)


def test_a_node_marked_down_reroutes_around_it_with_its_path_and_back_when_up(project: Path):
    done = medallion(
        project, "control", "down", "source:customers", "--reason", "bucket gone", "--by", "oncall"
    )
    assert done.exit_code == 0, done.output
    assert "source:customers marked down by oncall" in done.output
    assert (
        "rerouted bronze.customers: primary -> customers_us_east_replica around source:customers"
        in done.output
    )
    store = plane_of(project).store()
    routes = store.routes()
    assert list(routes) == ["bronze.customers"]  # its readers keep their primary
    assert (routes["bronze.customers"].route, routes["bronze.customers"].changed_by) == (
        "customers_us_east_replica",
        RECOVERY,
    )
    (entry,) = [e for e in store.audit(["dataset:bronze.customers"]) if e.kind == "route"]
    assert entry.details["around"] == ["source:customers"]
    assert entry.details["path"][0] == "replica:customers_us_east_replica"
    assert entry.details["requested_by"] == "oncall" and entry.details["cost"] == 2.5
    assert "source:customers is down (marked down by oncall" in entry.message
    status = medallion(project, "control", "status")
    assert "DOWN     source:customers  by oncall since " in status.output
    assert "`medallion control up source:customers` when it is back" in status.output
    assert "REROUTED bronze.customers -> customers_us_east_replica" in status.output
    assert (
        json.loads(medallion(project, "control", "status", "--format", "json").output)["down"][0][
            "node"
        ]
        == "source:customers"
    )

    # what is down now counts in the paths listed, unless --what-if
    listed = medallion(project, "recovery-paths", "silver.customers_clean", "--format", "json")
    assert listed.exit_code == 0, listed.output
    found = json.loads(listed.output)
    assert found["down"] == ["source:customers"] and found["chosen"]["cost"] == 3.5
    what_if = medallion(project, "recovery-paths", "silver.customers_clean", "--what-if")
    assert "chosen" in what_if.output.splitlines()[1]  # the primary path, cost 2

    up = medallion(project, "control", "up", "source:customers", "--reason", "restored")
    assert up.exit_code == 0, up.output
    assert "rerouted bronze.customers: customers_us_east_replica -> primary" in up.output
    assert store.routes() == {} and DownNodes(store).all() == {}
    cleared = medallion(project, "control", "status").output
    assert "nothing is disabled, down or rerouted" in cleared
    kinds = [e.kind for e in store.audit(["source:customers"])]
    assert kinds[-2:] == ["down", "up"]


def test_switching_a_source_off_reroutes_its_readers_and_switching_it_on_brings_them_back(
    project: Path,
):
    off = medallion(
        project, "control", "disable", "source:address_validation_feed", "--reason", "bad codes"
    )
    assert off.exit_code == 0, off.output
    assert "rerouted silver.addresses_validated: primary -> from_customer_profiles" in off.output
    assert "switched off: bronze.address_validation_feed" in off.output
    routes = plane_of(project).store().routes()
    assert {t: r.route for t, r in routes.items()} == {
        "silver.addresses_validated": "from_customer_profiles"
    }
    on = medallion(
        project, "control", "enable", "source:address_validation_feed", "--reason", "fixed"
    )
    assert on.exit_code == 0, on.output
    assert "silver.addresses_validated: from_customer_profiles -> primary" in on.output
    assert plane_of(project).store().routes() == {}


def test_a_switched_off_source_no_longer_stops_a_table_rerouted_to_its_replica(project: Path):
    off = medallion(project, "control", "disable", "source:customers", "--reason", "x")
    assert off.exit_code == 0, off.output
    assert "switched off: nothing" in off.output  # it reads the replica now
    plane = plane_of(project)
    assert "bronze.customers" not in plane.disabled(load_catalog(project, use_cache=False))
    assert plane.store().routes()["bronze.customers"].route == "customers_us_east_replica"


def test_recover_previews_a_given_node_and_keeps_an_operators_route(project: Path):
    routed = medallion(
        project,
        "control",
        "route",
        "silver.addresses_validated",
        "from_customer_profiles",
        "--reason",
        "vendor codes under review",
    )
    assert routed.exit_code == 0, routed.output
    preview = medallion(project, "control", "recover", "--down", "system:s3_raw", "--dry-run")
    assert preview.exit_code == 0, preview.output
    assert "down: system:s3_raw" in preview.output
    assert "reroute bronze.customers: primary -> customers_us_east_replica" in preview.output
    (unreachable,) = [x for x in preview.output.splitlines() if "no available path" in x]
    assert "bronze.orders," in unreachable and "gold.revenue_by_region" in unreachable
    routes = plane_of(project).store().routes()
    assert list(routes) == ["silver.addresses_validated"]  # a preview changes nothing

    nothing = medallion(project, "control", "recover", "--reason", "check")
    assert "every table keeps its route" in nothing.output  # the operator's route stays
    unknown = medallion(project, "control", "down", "bronze.orders", "--reason", "x")
    assert unknown.exit_code == 2 and "control disable bronze.orders" in unknown.output
    bad = medallion(project, "control", "recover", "--down", "source:nope", "--dry-run")
    assert bad.exit_code == 2 and "no source named 'nope'" in bad.output


def test_the_export_answers_the_seed_questions_from_its_tables_alone(project: Path, demo_catalog):
    from medallion_assets.recovery.paths import RecoveryGraph

    others = [p for p in demo_catalog.pipelines if p != "core_daily"]
    assert (
        medallion(project, "control", "profile", others[0], "focus", "--reason", "x").exit_code == 0
    )
    throttled = medallion(
        project, "control", "throttle", "s3_raw", "--rows-per-s", "500", "--reason", "slow"
    )
    assert throttled.exit_code == 0, throttled.output
    done = medallion(project, "catalog", "export")
    assert done.exit_code == 0, done.output
    store = plane_of(project).store()

    # Which profile does each pipeline run under, and why?
    profiles = dict(
        (p, (profile, origin))
        for p, profile, origin in store.query(
            "SELECT pipeline, profile, origin FROM pipeline_profiles"
        )
    )
    assert profiles["core_daily"] == ("focus", "pipeline_profiles")
    assert profiles[others[0]] == ("focus", f"override:{others[0]}")
    assert set(profiles) == set(demo_catalog.pipelines)
    # What does the focus profile reserve for critical work, and which profile is active?
    (reserved,) = store.query(
        "SELECT s.value FROM profile_settings s JOIN profiles p ON p.name = s.profile "
        "WHERE p.name = 'focus' AND s.setting = 'reserved_capacity_for_critical'"
    )
    focus = demo_catalog.profiles.profiles["focus"].settings
    assert json.loads(reserved[0]) == focus.reserved_capacity_for_critical
    assert store.query("SELECT name FROM profiles WHERE active") == [("balanced",)]
    # Which limits hold on s3_raw now, and who set them?
    (limits,) = store.query(
        "SELECT rows_per_second, max_concurrent_jobs, origin, reason FROM throttles "
        "WHERE system = 's3_raw'"
    )
    declared = demo_catalog.systems["s3_raw"].throttle.max_concurrent_jobs
    assert (limits[0], limits[1], limits[2], limits[3]) == (
        500.0,
        declared,
        "control store",
        "slow",
    )
    # Every path to a dataset, cheapest first, each a sequence of tables and routes.
    steps = store.query(
        "SELECT path_order, path_cost, step_table, route FROM dataset_recovery_paths "
        "WHERE dataset = :d ORDER BY path_order, sequence",
        {"d": "silver.addresses_validated"},
    )
    listing = RecoveryGraph.of(demo_catalog).listing("silver.addresses_validated")
    paths: dict[int, list[tuple[str, str]]] = {}
    for order, cost, table, route in steps:
        paths.setdefault(order, []).append((table, route))
        assert cost == listing.paths[order - 1].cost
    assert [tuple(p) for p in paths.values()] == [p.routes for p in listing.paths]
    # Which datasets keep a path that does not need source:customers?
    kept = store.query(
        "SELECT DISTINCT p.dataset FROM dataset_recovery_paths p WHERE NOT EXISTS ("
        " SELECT 1 FROM dataset_recovery_paths q WHERE q.dataset = p.dataset"
        " AND q.path_order = p.path_order AND q.needs LIKE '%\"source:customers\"%')"
    )
    down = RecoveryGraph.of(demo_catalog).cheapest({"source:customers"})
    assert {d for (d,) in kept} == set(down)
    # How is a column of a gold table computed from its input?
    (edge,) = store.query(
        "SELECT transform, column_transforms FROM dataset_lineage "
        "WHERE upstream = :up AND downstream = :down",
        {"up": "silver.orders_usd", "down": "gold.revenue_by_region"},
    )
    assert edge[0] == demo_catalog.datasets["gold.revenue_by_region"].sql_path
    assert any(t.endswith(": expression") for t in json.loads(edge[1]))
