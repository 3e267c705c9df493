"""The step-level side of a profile: which ready step starts next, what waits and what is
skipped. Each profile setting gets a test that fails if the setting were ignored; synthetic
catalogs cover the general case (diamonds, several systems, no criticality, a table on two
systems), TheWorldShop the real one."""

from __future__ import annotations

import random

import pytest

from medallion_assets.catalog import Catalog
from medallion_assets.catalog.operations import ProfileSettings
from medallion_assets.simulate.schedule import Schedule, simulate
from medallion_assets.simulate.scheduling import SchedulingPolicy, TableTraits


def policy(
    tables: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]],
    limits: dict[str, int],
    **settings: object,
) -> SchedulingPolicy:
    """A policy over ``{table: (criticality, systems, upstream)}``."""
    return SchedulingPolicy(
        {name: TableTraits(c, s, u) for name, (c, s, u) in tables.items()},
        ProfileSettings.model_validate({"max_concurrent_runs": 1, **settings}),
        limits,
    )


def test_default_weights_start_the_more_critical_ready_table_first():
    tables = {"t.normal": ("normal", ("spark",), ()), "t.high": ("high", ("spark",), ())}
    assert policy(tables, {}, spread_over_systems=False).pick(["t.normal", "t.high"], {}) == (
        "t.high"
    )


def test_criticality_priority_decides_the_order():
    tables = {"t.normal": ("normal", ("spark",), ()), "t.high": ("high", ("spark",), ())}
    weights = {"critical": 3, "high": 0, "normal": 5, "low": 0}
    inverted = policy(tables, {}, spread_over_systems=False, criticality_priority=weights)
    assert inverted.pick(["t.normal", "t.high"], {}) == "t.normal"
    assert simulate(inverted, set(tables), max_workers=1).order == ("t.normal", "t.high")


def test_the_upstream_of_a_critical_table_inherits_its_priority():
    # diamond: a -> (b, c) -> d(critical); x is high but feeds nothing critical
    tables = {
        "x.high": ("high", ("spark",), ()),
        "a": ("low", ("spark",), ()),
        "b": ("normal", ("spark",), ("a",)),
        "c": ("normal", ("spark",), ("a",)),
        "d": ("critical", ("spark",), ("b", "c")),
    }
    focus = policy(tables, {}, spread_over_systems=False)
    assert simulate(focus, set(tables), max_workers=1).order == ("a", "b", "c", "d", "x.high")
    # one worker: the diamond's join waits for both branches
    two = simulate(focus, set(tables), max_workers=2)
    assert two.start_of("d") > max(two.start_of("b"), two.start_of("c"))


def test_among_equally_urgent_tables_the_own_criticality_goes_first():
    tables = {
        "t.feed": ("low", ("spark",), ()),
        "t.mart": ("critical", ("spark",), ("t.feed",)),
        "t.report": ("critical", ("spark",), ()),
    }
    sim = policy(tables, {}, spread_over_systems=False)
    assert sim.priority("t.feed")[0] == sim.priority("t.report")[0]
    assert sim.pick(["t.feed", "t.report"], {}) == "t.report"
    # the profile's weights, not the criticality's rank, decide that second key
    tables = {
        "t.normal": ("normal", ("spark",), ()),
        "t.high": ("high", ("spark",), ()),
        "t.mart": ("critical", ("spark",), ("t.normal", "t.high")),
    }
    weights = {"critical": 9, "high": 0, "normal": 5, "low": 0}
    sim = policy(tables, {}, spread_over_systems=False, criticality_priority=weights)
    assert sim.pick(["t.high", "t.normal"], {}) == "t.normal"


def test_no_criticality_set_keeps_the_catalog_order():
    tables = {f"t{i}": ("normal", ("spark",), ()) for i in (3, 1, 2)}
    assert simulate(policy(tables, {}), set(tables), max_workers=1).order == ("t3", "t1", "t2")


def test_reserved_capacity_keeps_slots_from_non_critical_tables():
    tables = {"t.normal": ("normal", ("redshift",), ()), "t.crit": ("critical", ("redshift",), ())}
    none = policy(tables, {"redshift": 3}, reserved_capacity_for_critical=0)
    one = policy(tables, {"redshift": 3}, reserved_capacity_for_critical=1)
    assert none.may_start("t.normal", {"redshift": 2})
    assert not one.may_start("t.normal", {"redshift": 2})
    assert one.may_start("t.crit", {"redshift": 2})
    assert not one.may_start("t.crit", {"redshift": 3})
    assert one.blocker("t.normal", {"redshift": 2}) == (
        "redshift: 1 of its 3 slots reserved for critical (2 running)"
    )


def test_reserved_capacity_never_takes_the_last_slot_of_a_system():
    tables = {f"t{i}": ("normal", ("vendor",), ()) for i in range(3)}
    greedy = policy(tables, {"vendor": 2}, reserved_capacity_for_critical=10)
    assert greedy.reserved("vendor") == 1
    schedule = simulate(greedy, set(tables), max_workers=4)
    assert schedule.order == ("t0", "t1", "t2")
    assert schedule.peak("vendor") == 1
    assert [(w.table, w.reason, w.when()) for w in schedule.waits] == [
        ("t1", "vendor: 1 of its 2 slots reserved for critical (1 running)", "tick 0"),
        ("t2", "vendor: 1 of its 2 slots reserved for critical (1 running)", "ticks 0-1"),
    ]


def test_spread_over_systems_starts_where_there_is_room():
    tables = {"on.a": ("high", ("a",), ()), "on.b": ("low", ("b",), ())}
    limits = {"a": 4, "b": 4}
    assert policy(tables, limits, spread_over_systems=True).pick(["on.a", "on.b"], {"a": 2}) == (
        "on.b"
    )
    assert policy(tables, limits, spread_over_systems=False).pick(["on.a", "on.b"], {"a": 2}) == (
        "on.a"
    )


def test_balanced_keeps_a_busy_system_from_becoming_a_hotspot():
    # four high tables on s3 and four low ones on the warehouse, two workers
    tables = {f"s3.{i}": ("high", ("s3", "spark"), ()) for i in range(4)}
    tables |= {f"wh.{i}": ("low", ("warehouse", "spark"), ()) for i in range(4)}
    limits = {"s3": 4, "warehouse": 4, "spark": 8}
    balanced = simulate(policy(tables, limits, spread_over_systems=True), set(tables), 2)
    focus = simulate(policy(tables, limits, spread_over_systems=False), set(tables), 2)
    assert balanced.peak("s3") == balanced.peak("warehouse") == 1
    assert focus.peak("s3") == 2
    assert focus.order[:4] == ("s3.0", "s3.1", "s3.2", "s3.3")


def test_a_table_on_two_systems_waits_for_either():
    tables = {"gold.load": ("normal", ("spark", "redshift"), ())}
    loads = policy(tables, {"spark": 4, "redshift": 1})
    assert loads.may_start("gold.load", {"spark": 3})
    assert not loads.may_start("gold.load", {"spark": 4})
    assert loads.blocker("gold.load", {"redshift": 1}) == "redshift at its limit (1/1 running)"


def test_a_system_without_a_limit_is_never_a_reason_to_wait():
    tables = {f"t{i}": ("normal", ("spark", "lake"), ()) for i in range(5)}
    schedule = simulate(policy(tables, {"spark": 5}), set(tables), max_workers=5)
    assert len(schedule.ticks) == 1
    assert schedule.peak("lake") == 5
    assert schedule.systems == ("spark", "lake")


def test_skip_below_skips_the_tables_under_it():
    tables = {
        "t.low": ("low", ("spark",), ()),
        "t.normal": ("normal", ("spark",), ()),
        "t.high": ("high", ("spark",), ()),
    }
    assert policy(tables, {}).skipped(set(tables)) == {}
    assert policy(tables, {}, skip_below="normal").skipped(set(tables)) == {
        "t.low": "low is below the profile's skip_below (normal)"
    }
    high = policy(tables, {}, skip_below="high")
    assert set(high.skipped(set(tables))) == {"t.low", "t.normal"}
    assert simulate(high, set(tables), 2).order == ("t.high",)


def test_include_upstream_of_critical_keeps_what_critical_tables_read():
    tables = {
        "t.feed": ("low", ("spark",), ()),
        "t.other": ("low", ("spark",), ()),
        "t.mart": ("critical", ("spark",), ("t.feed",)),
    }
    kept = policy(tables, {}, skip_below="normal", include_upstream_of_critical=True)
    dropped = policy(tables, {}, skip_below="normal", include_upstream_of_critical=False)
    assert set(kept.skipped(set(tables))) == {"t.other"}
    assert set(dropped.skipped(set(tables))) == {"t.feed", "t.other"}
    # skipped, the feed is not waited for: the mart reads its published version
    assert simulate(dropped, set(tables), 1).order == ("t.mart",)


def test_include_upstream_of_critical_lets_their_upstream_take_reserved_slots():
    tables = {
        "t.feed": ("low", ("spark",), ()),
        "t.mart": ("critical", ("spark",), ("t.feed",)),
    }
    on = policy(
        tables, {"spark": 2}, reserved_capacity_for_critical=1, include_upstream_of_critical=True
    )
    off = policy(tables, {"spark": 2}, reserved_capacity_for_critical=1)
    assert on.may_start("t.feed", {"spark": 1})
    assert not off.may_start("t.feed", {"spark": 1})


def test_unknown_tables_and_no_workers_are_errors():
    tables = {"t": ("normal", ("spark",), ())}
    with pytest.raises(KeyError, match=r"unknown table 'gold\.nope'"):
        simulate(policy(tables, {}), {"gold.nope"}, 1)
    for ask in (lambda p: p.pick(["gold.nope"], {}), lambda p: p.rank("gold.nope")):
        with pytest.raises(KeyError, match=r"unknown table 'gold\.nope'"):
            ask(policy(tables, {}))
    with pytest.raises(ValueError, match="max_workers is 0: give at least 1 worker"):
        simulate(policy(tables, {}), {"t"}, 0)
    with pytest.raises(ValueError, match="table t: criticality 'urgent' is not one of"):
        policy({"t": ("urgent", ("spark",), ())}, {})


def assert_valid(schedule: Schedule, sim: SchedulingPolicy, selected: set[str]) -> None:
    """What every replay must hold, whatever the catalog and profile."""
    assert set(schedule.order) == selected - set(schedule.skipped)
    assert len(schedule.order) == len(set(schedule.order))
    for start in schedule.starts:
        for upstream in sim.upstream(start.table):
            if upstream in schedule.order:
                assert schedule.start_of(upstream) < start.at, (upstream, start.table)
    for tick in schedule.ticks:
        assert 1 <= len(tick.running) <= schedule.max_workers
        for system, busy in tick.per_system.items():
            assert busy <= schedule.limits.get(system, busy), (system, tick)
            plain = [t for t in tick.running if system in sim.systems(t) and not sim.favoured(t)]
            if system in schedule.limits:
                assert len(plain) <= schedule.limits[system] - sim.reserved(system)


@pytest.mark.parametrize("seed", range(40))
def test_random_catalogs_never_exceed_a_limit_and_respect_every_dependency(seed):
    rng = random.Random(seed)
    systems = ["spark", "s3", "vendor", "warehouse"]
    tables: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
    for i in range(rng.randint(1, 25)):
        earlier = list(tables)
        upstream = tuple(rng.sample(earlier, rng.randint(0, min(3, len(earlier)))))
        on = tuple(rng.sample(systems, rng.randint(1, 2)))
        tables[f"t{i}"] = (rng.choice(["critical", "high", "normal", "low"]), on, upstream)
    limits = {s: rng.randint(1, 4) for s in systems if rng.random() < 0.8}
    sim = policy(
        tables,
        limits,
        reserved_capacity_for_critical=rng.randint(0, 3),
        spread_over_systems=rng.random() < 0.5,
        include_upstream_of_critical=rng.random() < 0.5,
        skip_below=rng.choice([None, "normal", "high"]),
    )
    selected = set(rng.sample(list(tables), rng.randint(1, len(tables))))
    assert_valid(simulate(sim, selected, rng.randint(1, 6)), sim, selected)


# --- TheWorldShop -------------------------------------------------------------------------------


def demo_policy(catalog: Catalog, profile: str) -> SchedulingPolicy:
    assert catalog.profiles is not None
    return SchedulingPolicy.from_catalog(catalog, catalog.profiles.profiles[profile].settings)


def test_demo_tables_hold_their_source_compute_and_warehouse_systems(demo_catalog):
    sim = demo_policy(demo_catalog, "balanced")
    assert sim.systems("bronze.orders") == ("spark", "s3_raw")
    assert sim.systems("bronze.address_validation_feed") == ("spark", "s3_vendor")
    assert sim.systems("silver.orders_usd") == ("spark",)
    assert sim.systems("gold.revenue_by_region") == ("spark", "redshift")
    assert sim.limits == {
        "s3_raw": 8,
        "s3_raw_replica": 2,
        "s3_vendor": 2,
        "spark": 6,
        "redshift": 3,
    }


@pytest.mark.parametrize("profile", ["balanced", "focus"])
@pytest.mark.parametrize("workers", [1, 2, 4, 16])
def test_demo_replays_within_every_limit(demo_catalog, profile, workers):
    sim = demo_policy(demo_catalog, profile)
    tables = set(demo_catalog.datasets)
    assert_valid(simulate(sim, tables, workers), sim, tables)


def critical_closure(catalog: Catalog) -> set[str]:
    critical = {n for n, d in catalog.datasets.items() if d.criticality == "critical"}
    return critical | {
        u for c in critical for u in catalog.lineage.upstream(c) if u in catalog.datasets
    }


def test_demo_under_focus_starts_critical_marts_and_their_upstream_first(demo_catalog):
    closure = critical_closure(demo_catalog)
    order = simulate(demo_policy(demo_catalog, "focus"), set(demo_catalog.datasets), 2).order
    assert set(order[: len(closure)]) == closure
    balanced = simulate(demo_policy(demo_catalog, "balanced"), set(demo_catalog.datasets), 2).order
    assert set(balanced[: len(closure)]) != closure


def test_demo_focus_skips_the_low_clickstream_mart_and_balanced_runs_everything(demo_catalog):
    tables = set(demo_catalog.datasets)
    assert demo_policy(demo_catalog, "focus").skipped(tables) == {
        "gold.daily_user_events": "low is below the profile's skip_below (normal)"
    }
    assert demo_policy(demo_catalog, "balanced").skipped(tables) == {}


def test_demo_balanced_spreads_bronze_over_the_buckets(demo_catalog):
    tables = set(demo_catalog.datasets)
    balanced = simulate(demo_policy(demo_catalog, "balanced"), tables, 2)
    focus = simulate(demo_policy(demo_catalog, "focus"), tables, 2)
    assert balanced.peak("s3_raw") == 1
    assert focus.peak("s3_raw") == 2


@pytest.mark.parametrize("workers", [2, 4])
def test_demo_focus_finishes_the_critical_marts_sooner_and_balanced_the_whole_run(
    demo_catalog, workers
):
    tables = set(demo_catalog.datasets)
    focus = simulate(demo_policy(demo_catalog, "focus"), tables, workers)
    balanced = simulate(demo_policy(demo_catalog, "balanced"), tables, workers)
    assert focus.done_after("critical") < balanced.done_after("critical")
    # Balanced runs the low tables focus leaves out, and is still done no later; with room to
    # spare (4 workers), sooner.
    assert balanced.done_after() <= focus.done_after()
    assert workers == 2 or balanced.done_after() < focus.done_after()
