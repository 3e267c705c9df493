"""Every way to produce each dataset, and the cheapest one still available when nodes are down.

A table is produced along one of its routes (``reroute.routes``): its primary (its SQL over the
tables it reads; a bronze table's over its raw source), a replica of its raw source, an
alternate producer (another SQL file over other tables), or a backup (another project table
holding a copy, read as it is published). A route needs its own nodes (``source:NAME`` or
``replica:NAME``, the ``system:NAME`` each lives on, the project's compute system, and a
backup's table, whose data it reads without rebuilding it) and every table it reads, each
produced along a route of its own. That is an
AND/OR graph over the lineage: a path to a table is one route for it and, recursively, one for
every table the route reads, each table taking the same route wherever it appears (a table has
one route in force, as a reroute sets it).

A path's cost is its route's cost plus the cost of the path of each table it reads, so a table
read by two tables of the path counts twice (it is read twice). A path is available when none
of its nodes is down. The cheapest available path of every table is found at once with Knuth's
generalization of Dijkstra to AND/OR graphs (a route is settled once every table it reads is,
so alternates that read each other never settle through themselves); ties go to the route
listed first (the primary, then by cost and name).

Down nodes are what ``--down`` names and the kill switch's entities use: a table (it cannot be
produced at all), ``source:NAME``, ``replica:NAME``, ``system:NAME``. Pure: no I/O.

    graph = RecoveryGraph.of(catalog)
    graph.chosen("silver.customers_clean", {"source:customers"}).nodes
    # ('replica:customers_us_east_replica', 'system:s3_raw_replica', 'system:spark',
    #  'bronze.customers', 'silver.customers_clean')
"""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from medallion_assets.catalog import Catalog
from medallion_assets.kill_switch.switch import unknown_name
from medallion_assets.recovery.reroute import PRIMARY, routes

NODE_KINDS = ("source", "replica", "system")
BACKUP = "backup"
MAX_PATHS = 200  # listed per table; a wide graph has more combinations than anyone reads


@dataclass(frozen=True)
class Step:
    """One route of one table: what it costs, the nodes it needs and the tables it reads."""

    table: str
    route: str  # "primary", a replica's or an alternate's name
    kind: str  # primary | replica | alternate
    cost: float
    needs: tuple[str, ...]  # source:/replica:/system: nodes
    reads: tuple[str, ...]  # tables of the project


@dataclass(frozen=True)
class RecoveryPath:
    """One way to produce ``table``: the route of every table it builds, inputs first."""

    table: str
    cost: float
    routes: tuple[tuple[str, str], ...]  # (table, route), each table once, readers after inputs
    nodes: tuple[str, ...]  # each table's needs then the table, in that order, once each
    available: bool
    down: tuple[str, ...] = ()  # the nodes of it that are down

    def as_dict(self) -> dict[str, object]:
        return {
            "cost": self.cost,
            "nodes": list(self.nodes),
            "routes": {table: route for table, route in self.routes},
            "available": self.available,
        }

    def describe(self) -> str:
        taken = ", ".join(f"{t} via {r}" for t, r in self.routes if r != PRIMARY)
        return f"cost {self.cost:g}: " + (taken or "every table by its primary route")


@dataclass(frozen=True)
class Listing:
    """Every path of ``table`` (cheapest first, at most ``MAX_PATHS``) and the one chosen."""

    table: str
    paths: tuple[RecoveryPath, ...]
    chosen: RecoveryPath | None  # the cheapest available; None when none is
    truncated: bool = False

    def as_dict(self) -> dict[str, object]:
        chosen = None
        if self.chosen is not None:
            chosen = {"cost": self.chosen.cost, "nodes": list(self.chosen.nodes)}
        return {
            "table": self.table,
            "paths": [p.as_dict() for p in self.paths],
            "chosen": chosen,
            "truncated": self.truncated,
        }


@dataclass(frozen=True)
class RecoveryGraph:
    """Each table's routes as steps, in the catalog's order."""

    steps: Mapping[str, tuple[Step, ...]]
    known_nodes: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, catalog: Catalog) -> RecoveryGraph:
        compute = f"system:{catalog.project.compute_system}"
        steps: dict[str, tuple[Step, ...]] = {}
        for name, dataset in catalog.datasets.items():
            raw = catalog.raw_sources(dataset)
            own: list[str] = []
            for source_name, source in raw:
                own += [f"source:{source_name}", f"system:{source.system}"]
            reads = tuple(dict.fromkeys(u for u in dataset.upstream if u in catalog.datasets))
            found = []
            for route in routes(catalog, dataset):
                if route.kind == PRIMARY:
                    needs, inputs = (*own, compute), reads
                elif route.replica is not None:
                    replica = route.replica
                    needs = (f"replica:{replica.name}", f"system:{replica.system}", compute)
                    inputs = reads
                elif route.kind == BACKUP:
                    assert route.alternate is not None  # read as published: the table's data
                    needs, inputs = (*route.alternate.upstream, compute), ()
                else:
                    assert route.alternate is not None
                    upstream = route.alternate.upstream
                    inputs = tuple(dict.fromkeys(u for u in upstream if u in catalog.datasets))
                    needs = (compute,)
                step = Step(
                    name, route.name, route.kind, route.cost, tuple(dict.fromkeys(needs)), inputs
                )
                found.append(step)
            steps[name] = tuple(found)
        known = {f"source:{n}" for n in catalog.sources}
        known |= {f"system:{n}" for n in catalog.systems} | {compute}
        known |= {f"replica:{r.name}" for s in catalog.sources.values() for r in s.replicas}
        return cls(steps, frozenset(known))

    # --- the cheapest available path of every table ----------------------------------------

    def cheapest(self, down: Collection[str] = ()) -> dict[str, tuple[float, Step]]:
        """table -> (cost, the step of its cheapest available path), for every table that has
        one (Knuth's algorithm: each route is settled once all the tables it reads are)."""
        down = frozenset(down)
        waiting: dict[tuple[str, int], int] = {}
        readers: dict[str, list[tuple[str, int]]] = {}
        heap: list[tuple[float, int, str]] = []
        for table, options in self.steps.items():
            if table in down:
                continue
            for index, step in enumerate(options):
                if down.intersection(step.needs) or down.intersection(step.reads):
                    continue
                waiting[(table, index)] = len(step.reads)
                for read in step.reads:
                    readers.setdefault(read, []).append((table, index))
                if not step.reads:
                    heapq.heappush(heap, (step.cost, index, table))
        settled: dict[str, tuple[float, Step]] = {}
        while heap:
            cost, index, table = heapq.heappop(heap)
            if table in settled:
                continue
            settled[table] = (cost, self.steps[table][index])
            for reader, at in readers.get(table, ()):
                waiting[(reader, at)] -= 1
                if waiting[(reader, at)] == 0 and reader not in settled:
                    step = self.steps[reader][at]
                    total = step.cost + sum(settled[r][0] for r in step.reads)
                    heapq.heappush(heap, (total, at, reader))
        return settled

    def chosen(self, table: str, down: Collection[str] = ()) -> RecoveryPath | None:
        """The cheapest available path of ``table``; None when every path has a node down."""
        self._known_table(table)
        best = self.cheapest(down)
        if table not in best:
            return None
        choice = {t: step.route for t, (_, step) in best.items()}
        return self._path(table, choice, frozenset(down))

    def reroutes(self, down: Collection[str] = ()) -> dict[str, Step]:
        """The tables whose cheapest available path is not their primary route, with the step
        to take: what a reroute around ``down`` sets (tables with no path are left out)."""
        return {t: s for t, (_, s) in self.cheapest(down).items() if s.route != PRIMARY}

    def unreachable(self, down: Collection[str] = ()) -> list[str]:
        """The tables no available path produces, in the catalog's order."""
        best = self.cheapest(down)
        return [t for t in self.steps if t not in best]

    # --- every path of one table -------------------------------------------------------------

    def listing(self, table: str, down: Collection[str] = ()) -> Listing:
        """Every path of ``table`` with its cost and availability, cheapest first (available
        before not at equal cost), and the chosen one marked by ``Listing.chosen``."""
        self._known_table(table)
        down = frozenset(down)
        found: list[RecoveryPath] = []
        truncated = False
        for choice in self._choices(table):
            if len(found) >= MAX_PATHS:
                truncated = True
                break
            found.append(self._path(table, choice, down))
        found.sort(key=lambda p: (p.cost, not p.available, p.routes))
        return Listing(table, tuple(found), self.chosen(table, down), truncated)

    def _choices(self, table: str) -> Iterable[dict[str, str]]:
        """Every consistent choice of routes producing ``table`` (table -> route), depth
        first; a route reading a table already being produced above it (a cycle) is skipped."""

        def expand(
            pending: list[tuple[str, frozenset[str]]], choice: dict[str, str]
        ) -> Iterable[dict[str, str]]:
            if not pending:
                yield dict(choice)
                return
            (head, above), rest = pending[0], pending[1:]
            if head in choice:
                yield from expand(rest, choice)
                return
            for step in self.steps[head]:
                if above.intersection(step.reads) or head in step.reads:
                    continue  # it would read a table that needs it
                choice[head] = step.route
                inner = [(read, above | {head}) for read in step.reads]
                yield from expand([*inner, *rest], choice)
                del choice[head]

        yield from expand([(table, frozenset())], {})

    def _path(self, table: str, choice: Mapping[str, str], down: frozenset[str]) -> RecoveryPath:
        """The path ``choice`` gives ``table``: its tables inputs first, its cost, its nodes."""
        order: list[str] = []
        costs: dict[str, float] = {}

        def visit(name: str) -> float:
            if name in costs:
                return costs[name]
            step = self.step(name, choice[name])
            costs[name] = step.cost + sum(visit(r) for r in step.reads)
            order.append(name)
            return costs[name]

        cost = visit(table)
        nodes: list[str] = []
        for name in order:
            nodes += [*self.step(name, choice[name]).needs, name]
        unique = tuple(dict.fromkeys(nodes))
        blocked = tuple(n for n in unique if n in down)
        routes_taken = tuple((n, choice[n]) for n in order)
        return RecoveryPath(table, cost, routes_taken, unique, not blocked, blocked)

    def step(self, table: str, route: str) -> Step:
        return next(s for s in self.steps[table] if s.route == route)

    def _known_table(self, table: str) -> None:
        if table not in self.steps:
            close = difflib.get_close_matches(table, list(self.steps), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"no table named {table!r} in this project{hint}")

    def parse_node(self, text: str) -> str:
        """``--down`` NODE: a table, or ``source:``/``replica:``/``system:`` and a name of this
        project; raises ``ValueError`` saying what is known when it is not."""
        kind, colon, name = text.partition(":")
        if not colon:
            self._known_table(text)
            return text
        if kind not in NODE_KINDS:
            raise ValueError(
                f"unknown node kind {kind!r} in {text!r}: write a table, or source:NAME, "
                "replica:NAME or system:NAME"
            )
        if text not in self.known_nodes:
            same = sorted(n.partition(":")[2] for n in self.known_nodes if n.startswith(kind + ":"))
            raise unknown_name(kind, name, same)
        return text


# --- applying it: the routes to set around what is down ------------------------------------
