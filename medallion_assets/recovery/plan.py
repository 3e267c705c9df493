"""The fewest route changes that produce every table with what is down (``plan_recovery``):
each table keeps its route when it can, else takes its cheapest available path; a table no
path produces is left out."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from medallion_assets.recovery.paths import RecoveryGraph, RecoveryPath
from medallion_assets.recovery.reroute import PRIMARY


def down_nodes(graph: RecoveryGraph, given: Iterable[str]) -> frozenset[str]:
    """The ``--down`` arguments parsed (``RecoveryGraph.parse_node``)."""
    return frozenset(graph.parse_node(text) for text in given)


@dataclass(frozen=True)
class Reroute:
    """One table to move to another route, and the path it is produced along then."""

    table: str
    current: str  # the route in force
    route: str  # the route to set
    path: RecoveryPath
    around: tuple[str, ...] = ()  # the down nodes the route in force needed (none: a release)

    def describe(self) -> str:
        why = f" around {', '.join(self.around)}" if self.around else ""
        return f"{self.table}: {self.current} -> {self.route}{why} ({self.path.describe()})"


@dataclass(frozen=True)
class RecoveryPlan:
    """What to set around ``down``: the reroutes, inputs first, and the tables that no
    available path produces (each, and every table that needs it, left as it is)."""

    down: tuple[str, ...]
    reroutes: tuple[Reroute, ...]
    unreachable: tuple[str, ...]


def plan_recovery(
    graph: RecoveryGraph,
    down: Collection[str],
    in_force: Mapping[str, str],
    release: Collection[str] = (),
) -> RecoveryPlan:
    """The fewest route changes that produce every table some available path still produces.

    ``in_force``: table -> the route set now (absent or unknown: the primary). A table keeps
    its route while that route is available, reading tables that are produced; one that is not
    moves to the route of its cheapest available path (``cheapest``), so a table two hops below
    a down source moves only when no table between them recovers. ``release``: tables rerouted
    around an earlier outage, which go back to their primary as soon as it is available again.
    A table rerouted on purpose by an operator and still available keeps its route."""
    down = frozenset(down)
    best = graph.cheapest(down)
    known = {t: {s.route for s in steps} for t, steps in graph.steps.items()}
    start = {t: in_force.get(t, PRIMARY) for t in graph.steps}
    assign = {t: (r if r in known[t] else PRIMARY) for t, r in start.items()}
    for table in release:
        if table in assign:
            assign[table] = PRIMARY
    moved: set[str] = set()
    while True:
        produced = _producible(graph, assign, down)
        broken = {t for t in graph.steps if t not in produced}
        switch = [t for t in graph.steps if t in broken and t in best and t not in moved]
        if not switch:
            break
        for table in switch:
            assign[table] = best[table][1].route
            moved.add(table)
    unreachable = tuple(t for t in graph.steps if t in broken and t not in down)
    unreachable_set = set(unreachable)
    before = {t: (r if r in known[t] else PRIMARY) for t, r in start.items()}
    reroutes = []
    for table in _inputs_first(graph, assign, [t for t in graph.steps if assign[t] != start[t]]):
        if table in unreachable_set:
            continue
        path = graph._path(table, assign, down)
        around = _down_on(graph, table, before, down)
        reroutes.append(Reroute(table, start[table], assign[table], path, around))
    return RecoveryPlan(tuple(sorted(down)), tuple(reroutes), unreachable)


def _producible(graph: RecoveryGraph, assign: Mapping[str, str], down: frozenset[str]) -> set[str]:
    """The tables produced along the routes ``assign`` sets, with ``down`` down. A table on a
    cycle of those routes is not: reaching a table above it means it reads itself."""
    seen: dict[str, bool] = {}

    def visit(name: str, above: frozenset[str]) -> bool:
        if name in seen:
            return seen[name]
        if name in above or name in down:
            return False
        step = graph.step(name, assign[name])
        ok = not down.intersection(step.needs) and all(
            visit(read, above | {name}) for read in step.reads
        )
        seen[name] = ok
        return ok

    return {t for t in graph.steps if visit(t, frozenset())}


def _down_on(
    graph: RecoveryGraph, table: str, assign: Mapping[str, str], down: frozenset[str]
) -> tuple[str, ...]:
    """The down nodes on ``table``'s path through ``assign``'s routes (which may cycle)."""
    found: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        if name in down:
            found.append(name)
            return
        step = graph.step(name, assign[name])
        found.extend(n for n in step.needs if n in down)
        for read in step.reads:
            visit(read)

    visit(table)
    return tuple(dict.fromkeys(found))


def _inputs_first(
    graph: RecoveryGraph, assign: Mapping[str, str], tables: Iterable[str]
) -> list[str]:
    """``tables`` ordered so that a table comes after those of them it reads (through
    ``assign``'s routes, however many hops away)."""
    wanted = list(tables)
    order: list[str] = []
    done: set[str] = set()

    def visit(name: str, above: frozenset[str]) -> None:
        if name in done or name in above:
            return
        for read in graph.step(name, assign[name]).reads:
            visit(read, above | {name})
        done.add(name)
        order.append(name)

    for table in wanted:
        visit(table, frozenset())
    chosen = set(wanted)
    return [t for t in order if t in chosen]
