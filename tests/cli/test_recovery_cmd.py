"""Recovery applied through the control store, on TheWorldShop and each store the CLI runs on:
a node marked down, a source switched off or a node given for one decision moves every table
that needs it to its cheapest available path (audited with the path), readers keep their route,
an operator's route stays, and the tables go back when the node is up again."""

from __future__ import annotations

import json
import os
from pathlib import Path

from medallion_assets.catalog import load_catalog
from medallion_assets.control.plane import ControlPlane
from medallion_assets.control.recovery import RECOVERY, DownNodes
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
