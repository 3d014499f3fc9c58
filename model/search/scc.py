"""Graph walks: strongly connected components of any graph given by a successor function
(the lasso search's state graph, the import-cycle test's module graph), and the lasso
search's shortest paths over a graph with ``succ[n]`` = the (label, successor) pairs of
node ``n``."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, TypeVar

from kvproof.model.lang.instance import ActionInstance
from kvproof.model.lang.trace import ReplayError

N = TypeVar("N", bound=Hashable)


def components(nodes: Iterable[N], successors: Callable[[N], Iterable[N]]) -> Iterator[list[N]]:
    """Tarjan's strongly connected components of the subgraph on ``nodes`` (iterative: a
    state graph is deeper than Python's recursion limit). Roots are visited in sorted
    order, successors in the order ``successors`` gives them, so the components come out
    the same on every run."""
    inside = set(nodes)

    def out(n: N) -> Iterator[N]:
        return iter([m for m in successors(n) if m in inside])

    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on: set[N] = set()
    stack: list[N] = []
    counter = 0
    for root in sorted(inside):  # type: ignore[type-var]
        if root in index:
            continue
        work = [(root, out(root))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            n, it = work[-1]
            advanced = False
            for m in it:
                if m not in index:
                    index[m] = low[m] = counter
                    counter += 1
                    stack.append(m)
                    on.add(m)
                    work.append((m, out(m)))
                    advanced = True
                    break
                if m in on:
                    low[n] = min(low[n], index[m])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[n])
            if low[n] == index[n]:
                comp = []
                while True:
                    k = stack.pop()
                    on.discard(k)
                    comp.append(k)
                    if k == n:
                        break
                yield comp


def shortest_path(
    graph: Any, inside: set[int], src: int, targets: set[int]
) -> tuple[list[tuple[ActionInstance, int]], int]:
    """A shortest path inside the component from ``src`` to one of ``targets``."""
    if src in targets:
        return [], src
    back: dict[int, tuple[int, ActionInstance] | None] = {src: None}
    queue = deque([src])
    while queue:
        n = queue.popleft()
        for action, m in graph.succ[n]:
            if m in inside and m not in back:
                back[m] = (n, action)
                if m in targets:
                    path = []
                    k = m
                    while back[k] is not None:
                        prev, a = back[k]  # type: ignore[misc]
                        path.append((a, k))
                        k = prev
                    return path[::-1], m
                queue.append(m)
    raise ReplayError("lasso: the component is not strongly connected")
