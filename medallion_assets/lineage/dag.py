"""A directed acyclic graph that knows nothing of tables: walks, levels, cycles, cheapest paths.

>>> dag = DAG(["a", "b", "c"], [("a", "b"), ("b", "c")])
>>> dag.downstream("a")
{'b': 1, 'c': 2}
>>> dag.levels()
[['a'], ['b'], ['c']]
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class CycleError(ValueError):
    """The graph has a cycle; ``cycle`` lists its nodes in order, first node repeated last."""

    def __init__(self, cycle: list[object]):
        self.cycle = cycle
        super().__init__("cycle: " + " -> ".join(str(n) for n in cycle))


class DAG(Generic[T]):
    """Nodes and (upstream, downstream) edges; adjacency kept both ways for fast walks."""

    def __init__(self, nodes: Iterable[T], edges: Iterable[tuple[T, T]]):
        self._down: dict[T, list[T]] = {n: [] for n in nodes}
        self._up: dict[T, list[T]] = {n: [] for n in self._down}
        for upstream, downstream in edges:
            for node in (upstream, downstream):
                if node not in self._down:
                    self._down[node] = []
                    self._up[node] = []
            if downstream not in self._down[upstream]:
                self._down[upstream].append(downstream)
                self._up[downstream].append(upstream)

    @property
    def nodes(self) -> list[T]:
        return list(self._down)

    def edges(self) -> list[tuple[T, T]]:
        return [(u, d) for u, downs in self._down.items() for d in downs]

    def __contains__(self, node: object) -> bool:
        return node in self._down

    def parents(self, node: T) -> list[T]:
        return list(self._up[node])

    def children(self, node: T) -> list[T]:
        return list(self._down[node])

    def upstream(self, node: T, depth: int | None = None) -> dict[T, int]:
        """Every ancestor with its distance (shortest hop count), up to ``depth`` hops."""
        return self._walk(node, self._up, depth)

    def downstream(self, node: T, depth: int | None = None) -> dict[T, int]:
        """Every descendant with its distance (shortest hop count), up to ``depth`` hops."""
        return self._walk(node, self._down, depth)

    @staticmethod
    def _walk(start: T, adjacency: dict[T, list[T]], depth: int | None) -> dict[T, int]:
        if start not in adjacency:
            raise KeyError(start)
        seen: dict[T, int] = {start: 0}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            distance = seen[node] + 1
            if depth is not None and distance > depth:
                continue
            for nxt in adjacency[node]:
                if nxt not in seen:
                    seen[nxt] = distance
                    queue.append(nxt)
        del seen[start]
        return seen

    def find_cycle(self) -> list[T] | None:
        """One cycle as [a, b, ..., a], or None. Iterative DFS, safe for deep graphs."""
        state: dict[T, int] = {}  # 1 = on the stack, 2 = done
        for root in self._down:
            if root in state:
                continue
            stack: list[tuple[T, Iterator[T]]] = [(root, iter(self._down[root]))]
            path = [root]
            state[root] = 1
            while stack:
                node, children = stack[-1]
                child = next(children, None)
                if child is None:
                    stack.pop()
                    path.pop()
                    state[node] = 2
                elif state.get(child) == 1:
                    return [*path[path.index(child) :], child]
                elif child not in state:
                    state[child] = 1
                    path.append(child)
                    stack.append((child, iter(self._down[child])))
        return None

    def cycles(self) -> list[list[T]]:
        """One cycle per tangle of nodes, each as [a, b, ..., a]; after a cycle is found its
        nodes are set aside, so cycles through other nodes are found too.

        >>> DAG("abcd", [("a", "b"), ("b", "a"), ("c", "d"), ("d", "c")]).cycles()
        [['a', 'b', 'a'], ['c', 'd', 'c']]
        """
        found: list[list[T]] = []
        dag: DAG[T] = self
        while (cycle := dag.find_cycle()) is not None:
            found.append(cycle)
            aside = set(cycle)
            dag = DAG(
                [n for n in dag.nodes if n not in aside],
                [(u, d) for u, d in dag.edges() if u not in aside and d not in aside],
            )
        return found

    def levels(self) -> list[list[T]]:
        """Groups of nodes that can run in parallel, in order (Kahn's algorithm).

        Raises CycleError naming the cycle when there is one.
        """
        indegree = {n: len(ups) for n, ups in self._up.items()}
        level = [n for n, d in indegree.items() if d == 0]
        levels = []
        placed = 0
        while level:
            levels.append(sorted(level, key=str))
            placed += len(level)
            following = []
            for node in level:
                for child in self._down[node]:
                    indegree[child] -= 1
                    if indegree[child] == 0:
                        following.append(child)
            level = following
        if placed != len(self._down):
            cycle = self.find_cycle()
            raise CycleError(list(cycle or []))
        return levels

    def topological_order(self) -> list[T]:
        return [n for level in self.levels() for n in level]

    def cheapest_path(
        self, start: T, goal: T, cost: Callable[[T, T], float] | None = None
    ) -> tuple[float, list[T]] | None:
        """Cheapest downstream path from ``start`` to ``goal`` (Dijkstra); None if unreachable.

        ``cost(u, d)`` prices an edge; ``float('inf')`` marks it unusable. Default: 1 per edge.
        """
        price = cost or (lambda _u, _d: 1.0)
        best: dict[T, float] = {start: 0.0}
        previous: dict[T, T] = {}
        heap: list[tuple[float, int, T]] = [(0.0, 0, start)]
        counter = 1
        while heap:
            spent, _, node = heapq.heappop(heap)
            if node == goal:
                path = [goal]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return spent, path[::-1]
            if spent > best.get(node, float("inf")):
                continue
            for child in self._down[node]:
                step = price(node, child)
                if step == float("inf"):
                    continue
                total = spent + step
                if total < best.get(child, float("inf")):
                    best[child] = total
                    previous[child] = node
                    heapq.heappush(heap, (total, counter, child))
                    counter += 1
        return None

    def subgraph(self, keep: Iterable[T]) -> DAG[T]:
        wanted = set(keep)
        nodes = [n for n in self._down if n in wanted]
        edges = [(u, d) for u, d in self.edges() if u in wanted and d in wanted]
        return DAG(nodes, edges)
