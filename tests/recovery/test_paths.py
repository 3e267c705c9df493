"""The recovery graph: every path to a table, the cheapest available one with nodes down, across
several hops, with ties, unreachable tables and alternates that read each other."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from medallion_assets.cli import cli
from medallion_assets.recovery.paths import RecoveryGraph, Step
from medallion_assets.recovery.plan import _producible, plan_recovery

REPO = Path(__file__).resolve().parents[2]


def graph(*steps: Step) -> RecoveryGraph:
    by_table: dict[str, list[Step]] = {}
    for step in steps:
        by_table.setdefault(step.table, []).append(step)
    return RecoveryGraph({t: tuple(s) for t, s in by_table.items()})


def step(table, route="primary", cost=1.0, needs=(), reads=()) -> Step:
    kind = "primary" if route == "primary" else "alternate"
    return Step(table, route, kind, cost, tuple(needs), tuple(reads))


def test_a_table_two_hops_below_a_down_source_recovers_through_the_replica(demo_catalog):
    demo = RecoveryGraph.of(demo_catalog)
    down = {"source:customers"}
    chosen = demo.chosen("silver.customers_clean", down)
    assert chosen is not None and chosen.available
    assert chosen.routes == (
        ("bronze.customers", "customers_us_east_replica"),
        ("silver.customers_clean", "primary"),
    )
    assert chosen.cost == 2.5 + 1  # the replica's declared cost, then silver's primary
    assert chosen.nodes[:2] == ("replica:customers_us_east_replica", "system:s3_raw_replica")
    listing = demo.listing("silver.customers_clean", down)
    assert [(p.cost, p.available) for p in listing.paths] == [(2.0, False), (3.5, True)]
    assert listing.paths[0].down == ("source:customers",)
    # what a reroute around it sets: only bronze moves, its readers keep their primary
    assert {t: s.route for t, s in demo.reroutes(down).items()} == {
        "bronze.customers": "customers_us_east_replica"
    }


def test_an_alternate_producer_takes_over_when_its_primary_input_is_down(demo_catalog):
    demo = RecoveryGraph.of(demo_catalog)
    chosen = demo.chosen("silver.addresses_validated", {"source:address_validation_feed"})
    assert chosen is not None
    assert dict(chosen.routes) == {
        "bronze.customers": "primary",
        "silver.addresses_validated": "from_customer_profiles",
    }
    # with the customers' primary down too, the path goes through the replica: three hops
    both = {"source:address_validation_feed", "source:customers"}
    assert dict(demo.chosen("silver.addresses_validated", both).routes) == {
        "bronze.customers": "customers_us_east_replica",
        "silver.addresses_validated": "from_customer_profiles",
    }
    assert demo.chosen("silver.addresses_validated", both | {"system:s3_raw_replica"}) is None


def test_ties_go_to_the_route_listed_first():
    g = graph(step("t", "primary", 2.0, ["source:a"]), step("t", "other", 2.0, ["source:b"]))
    assert g.chosen("t").routes == (("t", "primary"),)
    assert g.chosen("t", {"source:a"}).routes == (("t", "other"),)


def test_a_table_no_available_path_produces_is_unreachable_and_said_so():
    g = graph(step("a", needs=["source:s"]), step("b", reads=["a"]), step("c", needs=["x:y"]))
    assert g.chosen("b", {"source:s"}) is None
    assert g.unreachable({"source:s"}) == ["a", "b"]
    listing = g.listing("b", {"source:s"})
    assert listing.chosen is None and [p.available for p in listing.paths] == [False]
    assert g.chosen("b", {"a"}) is None  # a table down cannot be produced at all


def test_alternates_that_read_each_other_never_settle_through_themselves():
    g = graph(
        step("a", needs=["source:sa"]),
        step("a", "from_b", 3.0, reads=["b"]),
        step("b", needs=["source:sb"]),
        step("b", "from_a", 3.0, reads=["a"]),
    )
    assert g.chosen("a", {"source:sa"}).routes == (("b", "primary"), ("a", "from_b"))
    assert g.chosen("a", {"source:sa", "source:sb"}) is None
    # the listing holds no path that builds a from b built from a
    routes = [dict(p.routes) for p in g.listing("a").paths]
    assert routes == [{"a": "primary"}, {"b": "primary", "a": "from_b"}]


def test_a_table_read_twice_in_a_path_counts_twice_and_takes_one_route():
    g = graph(
        step("base", needs=["source:s"]),
        step("base", "replica", 5.0, needs=["replica:r"]),
        step("left", reads=["base"]),
        step("right", reads=["base"]),
        step("top", reads=["left", "right"]),
    )
    chosen = g.chosen("top", {"source:s"})
    assert chosen.cost == 1 + (1 + 5) + (1 + 5)
    assert dict(chosen.routes)["base"] == "replica"
    # every path is consistent: base one way or the other, never both
    assert [dict(p.routes)["base"] for p in g.listing("top").paths] == ["primary", "replica"]


def test_the_cheapest_available_path_is_the_cheapest_listed_on_random_graphs():
    """Knuth's search over the whole graph agrees with listing every path of one table."""
    rng = random.Random(7)
    for _ in range(60):
        steps = []
        for n in range(7):
            for r in range(rng.randint(1, 3)):
                reads = rng.sample([f"t{m}" for m in range(7) if m != n], rng.randint(0, 2))
                needs = rng.sample(["source:a", "source:b", "system:x"], rng.randint(0, 2))
                route = "primary" if r == 0 else f"alt{r}"
                steps.append(step(f"t{n}", route, float(rng.randint(1, 4)), needs, reads))
        g = graph(*steps)
        down = set(rng.sample(["source:a", "source:b", "system:x", "t3"], rng.randint(0, 2)))
        for table in g.steps:
            listing = g.listing(table, down)
            available = [p.cost for p in listing.paths if p.available]
            if not available:
                assert listing.chosen is None
                continue
            assert listing.chosen is not None and listing.chosen.available
            assert listing.chosen.cost == min(available)
            assert listing.chosen in listing.paths


def test_a_down_node_must_exist(demo_catalog):
    demo = RecoveryGraph.of(demo_catalog)
    assert demo.parse_node("system:s3_raw") == "system:s3_raw"
    assert demo.parse_node("bronze.customers") == "bronze.customers"
    with pytest.raises(ValueError, match=r"no source named 'orderz'.*did you mean orders"):
        demo.parse_node("source:orderz")
    with pytest.raises(ValueError, match="unknown node kind 'bucket'"):
        demo.parse_node("bucket:x")
    with pytest.raises(ValueError, match=r"no table named 'silver\.custmers_clean'"):
        demo.parse_node("silver.custmers_clean")


def run(*args: str):
    """The command on the repo's demo, with only the --down nodes (no control store opened)."""
    return CliRunner().invoke(cli, ["recovery-paths", *args, "--what-if", "--project", str(REPO)])


def test_the_command_lists_every_path_and_marks_the_chosen_one():
    text = run("silver.customers_clean", "--down", "source:customers")
    assert text.exit_code == 0, text.output
    assert "2. cost 3.5  available  chosen" in text.output
    assert "1. cost 2  down: source:customers" in text.output

    answer = run("silver.customers_clean", "--down", "source:customers", "--format", "json")
    found = json.loads(answer.output)
    assert found["table"] == "silver.customers_clean"
    assert [(p["cost"], p["available"]) for p in found["paths"]] == [(2.0, False), (3.5, True)]
    assert found["chosen"]["cost"] == 3.5
    assert found["chosen"]["nodes"][0] == "replica:customers_us_east_replica"

    none = run("bronze.orders", "--down", "system:s3_raw", "--format", "json")
    assert none.exit_code == 1 and json.loads(none.output)["chosen"] is None
    unknown = run("bronze.orders", "--down", "replica:nope")
    assert unknown.exit_code == 2 and "no replica named 'nope'" in unknown.output


# --- the plan: the fewest route changes around what is down -----------------------------------


def chain() -> RecoveryGraph:
    """source:s -> b (no other route) -> s1 (or s1 from c, cost 4) -> g; c has its own source."""
    return graph(
        step("b", needs=["source:s"]),
        step("c", needs=["source:sc"]),
        step("s1", reads=["b"]),
        step("s1", "from_c", 4.0, reads=["c"]),
        step("g", reads=["s1"]),
    )


def test_a_table_two_hops_below_a_down_source_moves_and_its_readers_keep_their_route():
    plan = plan_recovery(chain(), {"source:s"}, {})
    assert [(r.table, r.current, r.route) for r in plan.reroutes] == [("s1", "primary", "from_c")]
    (moved,) = plan.reroutes
    assert moved.around == ("source:s",)
    assert moved.path.routes == (("c", "primary"), ("s1", "from_c")) and moved.path.cost == 5
    assert plan.unreachable == ("b",)
    assert plan_recovery(chain(), set(), {}).reroutes == ()  # nothing down: nothing moves


def test_routes_recovery_set_go_back_when_their_node_is_up_and_an_operators_route_stays():
    g = chain()
    back = plan_recovery(g, set(), {"s1": "from_c"}, release={"s1"})
    assert [(r.table, r.route, r.around) for r in back.reroutes] == [("s1", "primary", ())]
    # an operator's route to the alternate is kept while it is available
    assert plan_recovery(g, set(), {"s1": "from_c"}).reroutes == ()
    # and moves when its own input goes down: back to the primary, now the cheapest left
    moved = plan_recovery(g, {"source:sc"}, {"s1": "from_c"})
    assert [(r.table, r.route, r.around) for r in moved.reroutes] == [
        ("s1", "primary", ("source:sc",))
    ]
    # a route the metadata no longer declares counts as the primary
    assert plan_recovery(g, set(), {"s1": "gone"}).reroutes[0].route == "primary"


def test_a_plan_on_random_graphs_produces_every_table_some_path_produces():
    rng = random.Random(11)
    names = [f"t{n}" for n in range(8)]
    for _ in range(80):
        steps = []
        for n, name in enumerate(names):
            for r in range(rng.randint(1, 3)):
                pool = names[:n] if r == 0 else names  # primaries form a DAG, alternates need not
                reads = rng.sample(pool, min(len(pool), rng.randint(0, 2)))
                reads = [x for x in reads if x != name]
                needs = rng.sample(["source:a", "source:b", "replica:c"], rng.randint(0, 1))
                route = "primary" if r == 0 else f"alt{r}"
                steps.append(step(name, route, float(rng.randint(1, 4)), needs, reads))
        g = graph(*steps)
        in_force = {t: rng.choice(s).route for t, s in g.steps.items() if rng.random() < 0.3}
        down = frozenset(rng.sample(["source:a", "source:b", "replica:c"], rng.randint(0, 2)))
        plan = plan_recovery(g, down, in_force)
        after = {t: in_force.get(t, "primary") for t in g.steps}
        after.update({r.table: r.route for r in plan.reroutes})
        produced = _producible(g, after, down)
        reachable = set(g.cheapest(down))
        assert produced == reachable
        assert set(plan.unreachable) == set(g.steps) - reachable
        before = _producible(g, {t: in_force.get(t, "primary") for t in g.steps}, down)
        for reroute in plan.reroutes:  # only a table that was not produced moves
            assert reroute.table not in before
