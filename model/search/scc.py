"""Graph walks for the lasso search: strongly connected components and shortest paths,
over any graph with ``succ[n]`` = the (label, successor) pairs of node ``n``."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any

from kvproof.model.lang.instance import ActionInstance
from kvproof.model.lang.trace import ReplayError


def components(graph: Any, nodes: set[int]) -> Iterator[list[int]]:
    """Tarjan's strongly connected components of the subgraph on ``nodes`` (iterative)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter([m for _, m in graph.succ[root] if m in nodes]))]
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
                    work.append((m, iter([k for _, k in graph.succ[m] if k in nodes])))
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
