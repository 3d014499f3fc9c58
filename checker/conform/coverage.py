"""Walks that cover the model: the abstract transitions reachable at the run's size, and
the ``Guide`` that picks each walk's steps to take the ones no walk has taken yet.

An abstract transition is an action in its request's phase: (action, (decode's phase,
prefill's phase, the status decode sees)). ``reachable`` enumerates them by an
explicit-state search of the model (pages quotiented by symmetry, as ``explore`` does),
with the run's events and ``commit`` (which the code takes on its own), and with decode's
same-pass answers to a Success or a Failed poll taken first (``_urgent``). The search also
gives the phase graph (a request's phase before and after each of its actions) that the
guide steers by: when no enabled step is new, it takes one that moves a request toward
the nearest phase where an untaken transition is enabled.

Initial states where every prompt is rejected on arrival make walks of arrivals only;
the guide starts from states with at least one admissible request, so trivial walks are
rare (``ConformRun.trivial`` counts them).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvproof.checker.conform.engine import Beat
from kvproof.checker.conform.result import Coverage
from kvproof.checker.conform.walk import Move, Transition
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance
from kvproof.model.search.symmetry import canonicaliser

Phase = tuple[str, str, str]
STEER = 0.8  # how often a step without a new transition steers toward one (else uniform)


@dataclass(frozen=True)
class Reach:
    transitions: frozenset[Transition]
    edges: frozenset[tuple[Phase, Phase]]  # a request's phase before -> after its action
    states: int


def _phase_reader(concrete: Concrete) -> Callable[[Any, int], Phase]:
    idx = concrete.inst.var_index
    (a, i), (b, j), (c, k) = [
        (idx[v], concrete.inst.flat(v, (0,))) for v in ("dphase", "pphase", "poll")
    ]

    # Per-request cells are consecutive (a request's index is its flat offset).
    def phase(data: Any, r: int) -> Phase:
        return (data[a][i + r], data[b][j + r], data[c][k + r])

    return phase


def reachable(concrete: Concrete, allowed: Callable[[str], bool]) -> Reach:
    """Every abstract transition of the model's walks with these events."""
    sizes = concrete.inst.sizes
    sym = tuple(s for s in concrete.protocol.explore_symmetry if sizes.get(s, 0) > 1)
    canon = canonicaliser(concrete, sym)
    after = getattr(canon, "after", lambda parent, data: canon(data))
    succ = concrete.successor_fn()
    phase = _phase_reader(concrete)
    seen: set[Any] = set()
    todo: deque[Any] = deque()
    for s in concrete.initial_states():
        d = canon(s.data)
        if d not in seen:
            seen.add(d)
            todo.append(d)
    trans: set[Transition] = set()
    edges: set[tuple[Phase, Phase]] = set()
    ok: dict[str, bool] = {}
    n = sizes["Req"]
    while todo:
        data = todo.popleft()
        here = [phase(data, r) for r in range(n)]
        moves = succ(data)
        urgent = [(i, d) for i, d in moves if _urgent(i.action, here[i.args[0]])]
        for inst, nxt in urgent or moves:
            a = inst.action
            if a not in ok:
                ok[a] = a == "commit" or allowed(a)
            if not ok[a]:
                continue
            r = inst.args[0]
            trans.add((a, here[r]))
            edges.add((here[r], phase(nxt, r)))
            if nxt in seen:
                continue
            rep = after(data, nxt)
            if rep not in seen:
                seen.add(rep)
                todo.append(rep)
    return Reach(frozenset(trans), frozenset(edges), len(seen))


def _urgent(action: str, phase: Phase) -> bool:
    """Decode polls its transfers every pass and acts on what it reads in the same pass
    (``walk._close``): a Success is committed and a Failed one aborted before any other
    event, so nothing else happens to a request in those phases."""
    if phase[0] != "transfer":
        return False
    return (action == "commit" and phase[2] == "success") or (
        action == "abort" and phase[2] == "failed"
    )


class Guide:
    """Picks initial states and steps for the run's walks (``walk.Chooser``)."""

    def __init__(self, concrete: Concrete, reach: Reach, seed: int) -> None:
        self.concrete = concrete
        self.reach = reach
        self.rng = random.Random(seed)
        self.phase = _phase_reader(concrete)
        inits = list(concrete.initial_states())
        admissible = [s for s in inits if self._admissible(s)]
        self.inits = admissible or inits
        self.covered: set[Transition] = set()
        self.target: Transition | None = None
        self.walks = 0
        self._dist: dict[Phase, dict[Phase, int]] = {}

    def _admissible(self, state: State) -> bool:
        c = self.concrete
        return any(
            not c.value(state, "over_p", (r,)) and not c.value(state, "over_d", (r,))
            for r in range(c.inst.sizes["Req"])
        )

    def initial(self) -> State:
        """A walk's initial state; the walk aims at the next transition no walk has
        taken yet (in turn, so one the code never lets happen does not hold up the rest)."""
        todo = sorted(self.reach.transitions - self.covered)
        self.target = todo[self.walks % len(todo)] if todo else None
        self.walks += 1
        return self.rng.choice(self.inits)

    def learn(self, covered: set[Transition]) -> None:
        self.covered |= covered

    def coverage(self) -> Coverage:
        hit = self.covered & self.reach.transitions
        missing = sorted(self.reach.transitions - hit)
        shown = tuple(f"{a} in {'/'.join(p)}" for a, p in missing[:12])
        return Coverage(len(hit), len(self.reach.transitions), shown)

    def choose(
        self, concrete: Concrete, state: State, steps: list[tuple[ActionInstance, Any]],
        stalls: list[float | Beat],
    ) -> Move | None:  # fmt: skip
        if not steps and not stalls:
            return None
        here = {i: (i.action, self.phase(state.data, i.args[0])) for i, _ in steps}
        fresh = [i for i, t in here.items() if t not in self.covered]
        if self.target is not None:
            hits = [i for i, t in here.items() if t == self.target]
            if hits:
                return self._take(self.rng.choice(hits), here)
            if steps and self.rng.random() < STEER:
                dist = self._distances(self.target[1])
                far = len(dist) + 1
                scored = [(dist.get(self.phase(d, i.args[0]), far), i) for i, d in steps]
                best = min(d for d, _ in scored)
                if best < far:
                    near = [i for d, i in scored if d == best]
                    return self._take(
                        self.rng.choice([i for i in near if i in fresh] or near), here
                    )
        if fresh and self.rng.random() < 0.5:
            return self._take(self.rng.choice(fresh), here)
        moves: list[Move] = [i for i, _ in steps]
        moves.extend(stalls)
        pick = self.rng.choice(moves)
        return self._take(pick, here) if isinstance(pick, ActionInstance) else pick

    def _take(self, inst: ActionInstance, here: dict[ActionInstance, Transition]) -> Move:
        self.covered.add(here[inst])
        return inst

    def _distances(self, goal: Phase) -> dict[Phase, int]:
        """Per phase, the fewest actions of one request to ``goal``."""
        if goal in self._dist:
            return self._dist[goal]
        back: dict[Phase, list[Phase]] = {}
        for a, b in self.reach.edges:
            back.setdefault(b, []).append(a)
        dist = {goal: 0}
        queue = deque(dist)
        while queue:
            p = queue.popleft()
            for q in back.get(p, ()):
                if q not in dist:
                    dist[q] = dist[p] + 1
                    queue.append(q)
        self._dist[goal] = dist
        return dist
