"""Walks that cover the model: the abstract transitions reachable at the run's size, and
the ``Guide`` that picks each walk's steps to take the ones no walk has taken yet.

An abstract transition is an action in its request's phase: (action, (decode's phase,
prefill's phase, the status decode sees)). ``reachable`` enumerates them by an
explicit-state search of the model (pages quotiented by symmetry, as ``explore`` does),
with the run's events and ``commit`` (which the code takes on its own), and with decode's
same-pass answers to a Success or a Failed poll taken first (``_urgent``). The search also
gives the graph the guide steers by: a request's local state (``steer.py``) before and
after each of its actions, and where each transition was enabled. Each walk aims at the
transition taken and aimed at least, and aims anew on reaching it; a step it cannot take
at once is one that brings a request nearer to a state where its aim is enabled.

Initial states where every prompt is rejected on arrival make walks of arrivals only;
the guide starts from states with at least one admissible request, so trivial walks are
rare (``ConformRun.trivial`` counts them).
"""

from __future__ import annotations

import random
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvproof.checker.conform.engine import Beat
from kvproof.checker.conform.result import Coverage
from kvproof.checker.conform.steer import Local, distances, is_fault, local_reader
from kvproof.checker.conform.walk import Move, Transition
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance
from kvproof.model.search.symmetry import canonicaliser

Phase = tuple[str, str, str]
STEER = 0.9  # how often a step without a new transition steers toward one (else uniform)


@dataclass(frozen=True)
class Reach:
    transitions: frozenset[Transition]
    edges: frozenset[tuple[Local, Local]]  # a request's local state before -> after its action
    states: int
    # Per transition, the local states of its request where the search took it.
    goals: tuple[tuple[Transition, frozenset[Local]], ...] = ()


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
    local = local_reader(concrete)
    seen: set[Any] = set()
    todo: deque[Any] = deque()
    for s in concrete.initial_states():
        d = canon(s.data)
        if d not in seen:
            seen.add(d)
            todo.append(d)
    edges: set[tuple[Local, Local]] = set()
    goals: dict[Transition, set[Local]] = {}
    ok: dict[str, bool] = {}
    n = sizes["Req"]
    while todo:
        data = todo.popleft()
        here = [phase(data, r) for r in range(n)]
        mine = [local(data, r) for r in range(n)]
        moves = succ(data)
        urgent = [(i, d) for i, d in moves if _urgent(i.action, here[i.args[0]])]
        for inst, nxt in urgent or moves:
            a = inst.action
            if a not in ok:
                ok[a] = a == "commit" or allowed(a)
            if not ok[a]:
                continue
            r = inst.args[0]
            goals.setdefault((a, here[r]), set()).add(mine[r])
            edges.add((mine[r], local(nxt, r)))
            if nxt in seen:
                continue
            rep = after(data, nxt)
            if rep not in seen:
                seen.add(rep)
                todo.append(rep)
    return Reach(
        frozenset(goals),
        frozenset(edges),
        len(seen),
        tuple((t, frozenset(at)) for t, at in sorted(goals.items())),
    )


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
        self.taken_count: Counter[Transition] = Counter()  # steps of each transition
        self.aimed: Counter[Transition] = Counter()  # times a walk aimed at it
        self.local = local_reader(concrete)
        self.goals = dict(reach.goals)
        self._dist: dict[Transition, dict[Local, int]] = {}

    def _admissible(self, state: State) -> bool:
        c = self.concrete
        return any(
            not c.value(state, "over_p", (r,)) and not c.value(state, "over_d", (r,))
            for r in range(c.inst.sizes["Req"])
        )

    def initial(self) -> State:
        """A walk's initial state; the walk aims at a transition (``_aim``)."""
        self._aim()
        self.walks += 1
        return self.rng.choice(self.inits)

    def _aim(self) -> None:
        """Aim at the transition walks have taken and aimed at least: an untaken one
        scores only its aims, and once all are covered the rarest comes next (a commit
        and the steps after it need a long run of engine steps that random moves, each
        with a fault enabled, seldom make). Counting the aims means one the code never
        lets happen is aimed at in turn with the rest, not forever."""
        trans = self.reach.transitions
        if not trans:
            self.target = None
            return
        score = {t: self.taken_count[t] + self.aimed[t] for t in trans}
        low = min(score.values())
        self.target = self.rng.choice(sorted(t for t, n in score.items() if n == low))
        self.aimed[self.target] += 1

    def taken(self, transition: Transition) -> None:
        """The walk took it (``walk.Chooser``): on reaching its aim, the walk aims anew,
        so one walk can go on from a commit to the steps after it."""
        self.covered.add(transition)
        self.taken_count[transition] += 1
        if transition == self.target:
            self._aim()

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
                dist = self._distances(self.target)
                far = len(dist) + 1
                scored = [
                    ((dist.get(self.local(d, i.args[0]), far), is_fault(i.action)), i)
                    for i, d in steps
                    if not self._idle_fault(state, i, d)
                ]
                best = min((d for d, _ in scored), default=(far, True))
                if best[0] < far:
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

    def _idle_fault(self, state: State, inst: ActionInstance, after: Any) -> bool:
        """A fault that leaves its request's local state as it was (a late message the
        code must ignore) brings no aim nearer: steering never takes it, else a walk whose
        aim waits on a page it cannot reach would take it until its last step."""
        r = inst.args[0]
        return is_fault(inst.action) and self.local(after, r) == self.local(state.data, r)

    def _take(self, inst: ActionInstance, here: dict[ActionInstance, Transition]) -> Move:
        return inst  # counted in ``taken`` once the model took it

    def _distances(self, target: Transition) -> dict[Local, int]:
        """Per local state of a request, the fewest of its actions to one where
        ``target`` is enabled."""
        if target not in self._dist:
            self._dist[target] = distances(self.reach.edges, self.goals.get(target, ()))
        return self._dist[target]
