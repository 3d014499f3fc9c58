"""How the guide steers a walk toward a transition: a request's local state, finer than
its phase, and the fewest of its own steps from each local state to one where the
transition is enabled.

The phase (decode's phase, prefill's phase, the status decode sees) hides what decides
where a request goes next: a pending abort in prefill (``pend``) turns the sender's
report into Failed, so a walk aiming at a commit must not take it, yet it leaves the
phase as it was. The local state is every per-request variable of the model (one
argument, of the request sort; ghosts left out): still a few dozen values, read off
``coverage.reachable``'s search, so steering reads the model and nothing of an engine.

Among the steps that are equally near, an engine step goes before an environment fault
(``spec/events.py``): faults that do not bring the aim nearer only end walks early.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from kvproof.model.lang.concrete import Concrete
from kvproof.spec.events import BY_NAME, FAULT

Local = tuple[Any, ...]


def local_reader(concrete: Concrete) -> Callable[[Any, int], Local]:
    """Per request, the values of the model's per-request variables."""
    inst = concrete.inst
    n = inst.sizes["Req"]
    cells = [
        (inst.var_index[v.name], [inst.flat(v.name, (r,)) for r in range(n)])
        for v in concrete.protocol.vars
        if v.args == ("Req",) and not v.ghost
    ]

    def local(data: Any, r: int) -> Local:
        return tuple(data[i][at[r]] for i, at in cells)

    return local


def distances(edges: Iterable[tuple[Local, Local]], goals: Iterable[Local]) -> dict[Local, int]:
    """Per local state, the fewest of a request's own steps to one of ``goals``."""
    back: dict[Local, list[Local]] = {}
    for a, b in edges:
        if a != b:
            back.setdefault(b, []).append(a)
    dist = dict.fromkeys(goals, 0)
    queue = deque(dist)
    while queue:
        p = queue.popleft()
        for q in back.get(p, ()):
            if q not in dist:
                dist[q] = dist[p] + 1
                queue.append(q)
    return dist


def is_fault(action: str) -> bool:
    spec = BY_NAME.get(action)
    return spec is not None and spec.kind == FAULT
