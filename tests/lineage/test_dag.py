"""The generic DAG: walks with depth, execution levels, cycles named in order, cheapest paths."""

from __future__ import annotations

import math

import pytest

from medallion_assets.lineage.dag import DAG, CycleError

#   a -> b -> c -> d
#   a ---------> d        (a shortcut: d is 1 hop from a, not 3)
#   e -> c
#   f                     (isolated)
WALK_EDGES = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("e", "c")]


@pytest.fixture
def walk() -> DAG[str]:
    return DAG(["a", "b", "c", "d", "e", "f"], WALK_EDGES)


def test_downstream_gives_every_descendant_with_its_shortest_distance(walk):
    assert walk.downstream("a") == {"b": 1, "c": 2, "d": 1}


def test_upstream_gives_every_ancestor_with_its_shortest_distance(walk):
    assert walk.upstream("d") == {"c": 1, "a": 1, "b": 2, "e": 2}


def test_depth_limit_stops_the_walk_after_that_many_hops(walk):
    assert walk.downstream("a", depth=1) == {"b": 1, "d": 1}
    assert walk.upstream("d", depth=1) == {"c": 1, "a": 1}
    assert walk.upstream("d", depth=2) == {"c": 1, "a": 1, "b": 2, "e": 2}


def test_a_node_without_neighbours_has_empty_walks(walk):
    assert walk.upstream("f") == {}
    assert walk.downstream("f") == {}
    assert walk.upstream("a") == {}
    assert walk.downstream("d") == {}


def test_walking_from_an_unknown_node_raises_key_error(walk):
    with pytest.raises(KeyError):
        walk.downstream("zz")
    with pytest.raises(KeyError):
        walk.upstream("zz")


def test_edges_to_undeclared_nodes_add_them_and_duplicate_edges_count_once():
    dag = DAG(["a"], [("a", "b"), ("a", "b"), ("b", "c")])
    assert sorted(dag.nodes) == ["a", "b", "c"]
    assert dag.edges() == [("a", "b"), ("b", "c")]
    assert dag.parents("b") == ["a"]
    assert dag.children("a") == ["b"]


def test_levels_group_nodes_whose_upstream_is_done(walk):
    # a, e, f read nothing; b needs a; c needs b and e; d needs c (and a).
    assert walk.levels() == [["a", "e", "f"], ["b"], ["c"], ["d"]]


def test_diamond_levels_put_both_branches_side_by_side():
    dag = DAG([], [("src", "left"), ("src", "right"), ("left", "sink"), ("right", "sink")])
    assert dag.levels() == [["src"], ["left", "right"], ["sink"]]
    assert dag.topological_order() == ["src", "left", "right", "sink"]


def test_find_cycle_is_none_for_an_acyclic_graph(walk):
    assert walk.find_cycle() is None


def test_find_cycle_returns_the_cycle_in_edge_order_closed_on_its_first_node():
    # x leads into the cycle but is not part of it; d hangs off it.
    dag = DAG([], [("x", "a"), ("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])
    assert dag.find_cycle() == ["a", "b", "c", "a"]


def test_levels_raise_cycle_error_naming_the_cycle_in_order():
    dag = DAG([], [("x", "a"), ("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])
    with pytest.raises(CycleError) as raised:
        dag.levels()
    assert str(raised.value) == "cycle: a -> b -> c -> a"
    assert raised.value.cycle == ["a", "b", "c", "a"]


def test_a_table_reading_itself_is_a_cycle_of_one():
    dag = DAG(["a", "b"], [("a", "b"), ("b", "b")])
    with pytest.raises(CycleError, match=r"^cycle: b -> b$"):
        dag.levels()


def test_topological_order_also_refuses_a_cycle():
    dag = DAG([], [("a", "b"), ("b", "a")])
    with pytest.raises(CycleError, match=r"^cycle: a -> b -> a$"):
        dag.topological_order()


# Prices per edge:  s -1-> a -10-> g,  s -5-> b -1-> g,  a -1-> b,  a -> u is unusable.
PRICES = {
    ("s", "a"): 1.0,
    ("s", "b"): 5.0,
    ("a", "g"): 10.0,
    ("a", "b"): 1.0,
    ("b", "g"): 1.0,
    ("a", "u"): math.inf,
}


@pytest.fixture
def priced() -> DAG[str]:
    return DAG(["lonely"], list(PRICES))


def price(upstream: str, downstream: str) -> float:
    return PRICES[(upstream, downstream)]


def test_cheapest_path_adds_edge_costs_and_takes_the_cheapest_route(priced):
    assert priced.cheapest_path("s", "g", price) == (3.0, ["s", "a", "b", "g"])


def test_cheapest_path_avoids_an_unusable_edge():
    prices = {**PRICES, ("a", "b"): math.inf}
    dag = DAG([], list(prices))
    assert dag.cheapest_path("s", "g", lambda u, d: prices[(u, d)]) == (6.0, ["s", "b", "g"])


def test_a_goal_reachable_only_through_an_unusable_edge_is_unreachable(priced):
    assert priced.cheapest_path("s", "u", price) is None


def test_a_goal_with_no_path_at_all_is_unreachable(priced):
    assert priced.cheapest_path("s", "lonely", price) is None
    assert priced.cheapest_path("g", "s", price) is None  # paths follow edges downstream only


def test_cheapest_path_counts_hops_without_a_cost_function(priced):
    cost, path = priced.cheapest_path("s", "g")
    assert cost == 2.0
    assert path in (["s", "a", "g"], ["s", "b", "g"])  # two routes of two hops each


def test_the_cheapest_path_from_a_node_to_itself_is_free(priced):
    assert priced.cheapest_path("s", "s", price) == (0.0, ["s"])


CHAIN = 50_000


@pytest.fixture(scope="module")
def chain() -> DAG[int]:
    return DAG(range(CHAIN), [(i, i + 1) for i in range(CHAIN - 1)])


def test_a_50k_node_chain_walks_without_recursion_limits(chain):
    down = chain.downstream(0)
    assert len(down) == CHAIN - 1
    assert down[CHAIN - 1] == CHAIN - 1
    assert chain.upstream(CHAIN - 1)[0] == CHAIN - 1
    assert chain.downstream(0, depth=3) == {1: 1, 2: 2, 3: 3}


def test_a_50k_node_chain_has_one_level_per_node_and_no_cycle(chain):
    assert chain.find_cycle() is None
    levels = chain.levels()
    assert len(levels) == CHAIN
    assert levels[0] == [0] and levels[-1] == [CHAIN - 1]


def test_a_50k_node_chain_has_a_cheapest_path_end_to_end(chain):
    cost, path = chain.cheapest_path(0, CHAIN - 1)
    assert cost == CHAIN - 1
    assert path == list(range(CHAIN))


def test_a_50k_node_ring_is_found_as_one_cycle():
    ring = DAG(range(CHAIN), [(i, (i + 1) % CHAIN) for i in range(CHAIN)])
    assert ring.find_cycle() == [*range(CHAIN), 0]
    with pytest.raises(CycleError):
        ring.levels()
