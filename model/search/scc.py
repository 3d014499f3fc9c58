"""Graph walks: strongly connected components of any graph given by a successor function
(the lasso search's state graph, the import-cycle test's module graph), and breadth-first
search over labelled edges (the lasso search's stems and loops)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, TypeVar

N = TypeVar("N", bound=Hashable)
# a node reached -> its distance, its predecessor and the edge's label (None, None: a start)
Reached = dict[N, tuple[int, N | None, Any]]


def components(nodes: Iterable[N], successors: Callable[[N], Iterable[N]]) -> Iterator[list[N]]:
    """Tarjan's strongly connected components of the subgraph on ``nodes`` (iterative: a
    state graph is deeper than Python's recursion limit). Roots are visited in sorted
    order, successors in the order ``successors`` gives them, so the components come out
    the same on every run."""
    inside = set(nodes)

    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on: set[N] = set()
    stack: list[N] = []

    def enter(n: N) -> tuple[N, Iterator[N]]:
        index[n] = low[n] = len(index)
        stack.append(n)
        on.add(n)
        return n, iter([m for m in successors(n) if m in inside])

    for root in sorted(inside):  # type: ignore[type-var]
        if root in index:
            continue
        work = [enter(root)]
        while work:
            n, it = work[-1]
            for m in it:
                if m not in index:
                    work.append(enter(m))
                    break
                if m in on:
                    low[n] = min(low[n], index[m])
            else:
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


def breadth_first(
    starts: Iterable[N],
    successors: Callable[[N], Iterable[tuple[Any, N]]],
    stop: Callable[[N], bool] = lambda n: False,
) -> tuple[Reached[N], N | None]:
    """Every node reached from ``starts`` over ``successors(n)``, its (label, node) pairs;
    the search ends at the first node reached that ``stop`` accepts, returned too."""
    reached: Reached[N] = {}
    queue: deque[N] = deque()
    for n in starts:
        if n not in reached:
            reached[n] = (0, None, None)
            if stop(n):
                return reached, n
            queue.append(n)
    while queue:
        n = queue.popleft()
        for label, m in successors(n):
            if m not in reached:
                reached[m] = (reached[n][0] + 1, n, label)
                if stop(m):
                    return reached, m
                queue.append(m)
    return reached, None


def path_to(reached: Reached[N], n: N) -> tuple[N, list[tuple[Any, N]]]:
    """The start ``n`` was reached from, and the (label, node) steps from there to ``n``."""
    path = []
    _, prev, label = reached[n]
    while prev is not None:
        path.append((label, n))
        n = prev
        _, prev, label = reached[n]
    return n, path[::-1]
