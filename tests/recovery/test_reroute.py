"""Routes of TheWorldShop's tables: the primary first, then replicas and alternates by cost;
a reroute walks them in that order once; an alternate is built with its own SQL, inputs and
code version; `then: reroute` implies the reroute_source action."""

from __future__ import annotations

from dataclasses import replace

from medallion_assets.catalog import AlternateProducer
from medallion_assets.catalog.operations import HealingRule
from medallion_assets.healing.diagnosis import Failure, diagnose
from medallion_assets.recovery.reroute import PRIMARY, along, find_route, next_route, routes


def test_a_bronze_table_routes_to_its_sources_replicas(demo_catalog):
    options = routes(demo_catalog, demo_catalog.datasets["bronze.customers"])
    assert [(r.name, r.kind, r.cost) for r in options] == [
        ("primary", "primary", 1.0),
        ("customers_us_east_replica", "replica", 2.5),
    ]
    assert options[0].detail == "s3://theworldshop-raw/customers/ (s3_raw)"
    assert options[1].replica is not None and options[1].replica.system == "s3_raw_replica"
    assert routes(demo_catalog, demo_catalog.datasets["bronze.orders"])[1:] == ()


def test_routes_are_ordered_by_cost_and_walked_once(demo_catalog):
    dataset = demo_catalog.datasets["silver.addresses_validated"]
    alternate = dataset.alternates[0]
    cheaper = replace(alternate, name="cheaper", cost=2.0)
    dataset = replace(dataset, alternates=(alternate, cheaper))
    options = routes(demo_catalog, dataset)
    assert [r.name for r in options] == [PRIMARY, "cheaper", "from_customer_profiles"]
    assert next_route(options, PRIMARY).name == "cheaper"
    assert next_route(options, "cheaper").name == "from_customer_profiles"
    assert next_route(options, "from_customer_profiles") is None
    assert next_route(options, "removed_from_metadata").name == "cheaper"  # as from primary
    assert find_route(demo_catalog, dataset, "nope") is None


def test_an_alternate_is_built_from_its_own_sql_inputs_and_code_version(demo_catalog):
    dataset = demo_catalog.datasets["silver.addresses_validated"]
    route = find_route(demo_catalog, dataset, "from_customer_profiles")
    built = along(dataset, route)
    assert isinstance(route.alternate, AlternateProducer)
    assert built.upstream == ("bronze.customers",) != dataset.upstream
    assert built.sql == route.alternate.sql and "UNVALIDATED" in built.sql
    assert built.code_version != dataset.code_version
    assert (built.name, built.rules, built.target) == (dataset.name, dataset.rules, dataset.target)
    assert along(dataset, routes(demo_catalog, dataset)[0]) is dataset


def test_then_reroute_runs_reroute_source_after_the_rules_own_actions():
    rule = HealingRule.model_validate(
        {
            "name": "gone",
            "match": {"message": "NoSuchBucket"},
            "error_code": "GONE",
            "actions": ["wait"],
            "then": "reroute",
        }
    )
    diagnosis = diagnose(
        [rule], Failure.of(FileNotFoundError("s3://x does not exist (NoSuchBucket)"))
    )
    assert (diagnosis.actions, diagnosis.then) == (("wait", "reroute_source"), "reroute")
    explicit = rule.model_copy(update={"actions": ("reroute_source", "wait")})
    assert diagnose([explicit], Failure.of(OSError("NoSuchBucket"))).actions == (
        "reroute_source",
        "wait",
    )
