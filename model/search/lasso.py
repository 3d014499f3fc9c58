"""Liveness by explicit-state search: fair lassos over the whole state graph at one size.

A liveness property ``always (trigger(x) -> eventually goal(x))`` is violated iff some
reachable run reaches a state where ``trigger(x)`` holds and ``goal(x)`` has not held
since, then loops forever among states where ``goal(x)`` is false, fairly. The search:

1. builds every reachable state and its enabled instances (no symmetry reduction: a loop in
   the quotient graph is not a loop of the real system, and the liveness sizes are small);
2. per property instance ``x``, the *pending* states: reachable with the monitor set
   (``trigger`` held at some point and ``goal`` has not held since), i.e. the closure of
   ``trigger and not goal`` states under successors where ``goal`` is false;
3. Tarjan's strongly connected components of the pending subgraph (every state may also
   stutter, so one state is a component). A component is *fair* when every weakly fair
   instance (``model/lang/liveness.py``) is either disabled in one of its states or taken
   on one of its edges. Weak fairness needs no decomposition: a sub-component of an unfair
   component is unfair (fewer disabling states, fewer edges);
4. a lasso into the fair component whose entry is nearest: a shortest stem (breadth-first
   over state x monitor), then a loop through the component that takes or disables every
   obligation and comes back; replayed concretely before it is reported.

No fair pending component means the property holds at this size, at every depth: the graph
is complete (``LivenessResult.complete``), the liveness counterpart of ``check --complete``.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.liveness import Fair, Liveness, check_liveness_names, fairness
from kvproof.model.lang.trace import ReplayError, Trace, initial_assignment, replay
from kvproof.model.search.scc import breadth_first, components, path_to


@dataclass(frozen=True)
class LassoResult:
    """One property's verdict: ``trace`` is a fair lasso (None: it holds)."""

    property: str
    holds: bool
    trace: Trace | None = None
    instance: tuple[int, ...] | None = None  # the arguments of the violated instance
    seconds: float = 0.0
    states: tuple[State, ...] = ()  # the lasso's states, derived once where it is re-checked


@dataclass(frozen=True)
class LivenessResult:
    variant: str
    sizes: dict[str, int]
    engine: str  # "explicit" (complete at the size) or "bmc" (to ``depth``)
    results: tuple[LassoResult, ...]
    states: int
    transitions: int
    fair: tuple[str, ...]  # "action (why)" of every weak-fairness obligation
    seconds: float
    depth: int | None = None  # bmc: the largest stem + loop searched

    @property
    def holds(self) -> bool:
        return all(r.holds for r in self.results)

    @property
    def complete(self) -> bool:
        """A 'holds' means every depth at this size (the whole graph was searched)."""
        return self.engine == "explicit"

    def result(self, name: str) -> LassoResult:
        return next(r for r in self.results if r.property == name)


def selected(protocol: Protocol, names: tuple[str, ...] | None) -> tuple[Liveness, ...]:
    check_liveness_names(protocol)
    if names is None:
        return tuple(protocol.liveness)
    by = {p.name: p for p in protocol.liveness}
    return tuple(by[n] for n in names if n in by)


# A property -> its lasso, its states (replayed) and the violated instance's arguments, or None.
Finder = Callable[[Liveness], "tuple[Trace, tuple[State, ...], tuple[int, ...]] | None"]


def judge(props: tuple[Liveness, ...], find: Finder) -> tuple[LassoResult, ...]:
    """One timed verdict per property, whichever engine ``find`` searches with."""
    results = []
    for prop in props:
        t0 = time.perf_counter()
        found = find(prop)
        took = time.perf_counter() - t0
        if found is None:
            results.append(LassoResult(prop.name, True, seconds=took))
        else:
            trace, states, args = found
            results.append(LassoResult(prop.name, False, trace, args, took, states))
    return tuple(results)


def fair_labels(obligations: tuple[Fair, ...]) -> tuple[str, ...]:
    """``LivenessResult.fair``: "action (why)" of each obligation."""
    return tuple(f"{f.action} ({f.why})" for f in obligations)


def instances_of(inst: Instance, prop: Liveness) -> Iterator[tuple[int, ...]]:
    return itertools.product(*(range(inst.sizes[s]) for s in prop.params))


def label(prop: Liveness, args: tuple[int, ...]) -> str:
    """``pages_return(r0, p1)``: the instance as the traces print elements."""
    inner = ", ".join(f"{s[0].lower()}{a}" for s, a in zip(prop.params, args, strict=True))
    return f"{prop.name}({inner})"


class Graph:
    """Every reachable state of an instance, with its enabled instances and successors."""

    def __init__(self, concrete: Concrete, obligations: tuple[Fair, ...]) -> None:
        self.concrete = concrete
        self._plain = {f.action for f in obligations if f.when is None}
        self._guarded = [f for f in obligations if f.when is not None]
        self._when: dict[tuple[int, ActionInstance], Any] = {}
        self._enabled: dict[int, dict[ActionInstance, list[int]]] = {}
        expanded: list[list[tuple[ActionInstance, Any]]] = []  # per state, in BFS order

        def expand(data: Any) -> list[tuple[ActionInstance, Any]]:
            expanded.append(concrete.successor_data(data))
            return expanded[-1]

        reached, _ = breadth_first((s.data for s in concrete.initial_states()), expand)
        self.datas = list(reached)
        ids = {data: n for n, data in enumerate(self.datas)}
        self.succ = [[(action, ids[nxt]) for action, nxt in out] for out in expanded]
        self.initial = [n for n, (d, _, _) in enumerate(reached.values()) if d == 0]

    @property
    def transitions(self) -> int:
        return sum(len(s) for s in self.succ)

    def truth(self, fn: Any, args: tuple[int, ...]) -> list[bool]:
        """``fn(s, *args)`` in every state (compiled, like an invariant)."""
        check = self.concrete.checker(Invariant("_lasso", lambda s: fn(s, *args)))
        return [check(d) for d in self.datas]

    def fair_enabled(self, n: int) -> dict[ActionInstance, list[int]]:
        """The weakly fair instances enabled in state ``n``, each with its successors."""
        out = self._enabled.get(n)
        if out is None:
            out = self._enabled[n] = {}
            for action, m in self.succ[n]:
                if action.action in self._plain or any(
                    f.action == action.action and self._holds_when(i, action, n)
                    for i, f in enumerate(self._guarded)
                ):
                    out.setdefault(action, []).append(m)
        return out

    def _holds_when(self, i: int, action: ActionInstance, n: int) -> bool:
        fn = self._when.get((i, action))
        if fn is None:
            when = self._guarded[i].when
            inv = Invariant("_when", lambda s: when(s, *action.args))  # type: ignore[misc]
            fn = self._when[(i, action)] = self.concrete.checker(inv)
        return bool(fn(self.datas[n]))


def find_lassos(
    protocol: Protocol,
    sizes: dict[str, int],
    *,
    variant: str = "",
    names: tuple[str, ...] | None = None,
) -> LivenessResult:
    """Every liveness property of ``protocol`` (or ``names``) at ``sizes``: a fair lasso
    for each violated one, shortest stem first."""
    start = time.perf_counter()
    props = selected(protocol, names)
    obligations = fairness(protocol)
    concrete = Concrete(Instance(protocol, sizes))
    graph = Graph(concrete, obligations)

    def find(prop: Liveness) -> tuple[Trace, tuple[State, ...], tuple[int, ...]] | None:
        # The shortest lasso (stem and loop) over the property's instances; the first of
        # equal length wins.
        lassos = [(_lasso(graph, prop, args), args) for args in instances_of(concrete.inst, prop)]
        found = [(lasso, args) for lasso, args in lassos if lasso is not None]
        if not found:
            return None
        (stem, loop, init_id), args = min(found, key=lambda f: len(f[0][0]) + len(f[0][1]))
        trace, states = lasso_trace(concrete, graph.datas[init_id], stem, loop, prop, args, variant)
        return trace, states, args

    return LivenessResult(
        variant=variant,
        sizes=dict(sizes),
        engine="explicit",
        results=judge(props, find),
        states=len(graph.datas),
        transitions=graph.transitions,
        fair=fair_labels(obligations),
        seconds=time.perf_counter() - start,
    )


def lasso_trace(
    concrete: Concrete,
    init: Any,
    stem: list[ActionInstance],
    loop: list[ActionInstance],
    prop: Liveness,
    args: tuple[int, ...],
    variant: str,
    source: str = "lasso",
) -> tuple[Trace, tuple[State, ...]]:
    """The lasso as a ``Trace`` (``loop`` = where the loop starts) and its states, replayed
    and checked: the loop comes back to the state it starts from."""
    trace = Trace(
        variant,
        dict(concrete.inst.sizes),
        initial_assignment(concrete, State(init)),
        tuple(stem + loop),
        violated=prop.name,
        meta={"instance": label(prop, args), "source": source},
        loop=len(stem),
    )
    states = replay(trace, concrete)
    if states[len(stem)] != states[-1]:
        raise ReplayError(f"lasso for {label(prop, args)}: the loop does not come back")
    if concrete.holds(lambda s: prop.goal(s, *args), states[-1]):
        raise ReplayError(f"lasso for {label(prop, args)}: the goal holds in the loop")
    return trace, tuple(states)


# -- one property instance -------------------------------------------------------------------


def _lasso(
    graph: Graph, prop: Liveness, args: tuple[int, ...]
) -> tuple[list[ActionInstance], list[ActionInstance], int] | None:
    trig = graph.truth(prop.trigger, args)
    goal = graph.truth(prop.goal, args)
    # pending: reachable with the monitor set, the closure of trigger-and-not-goal states
    # under not-goal successors
    seeds = [n for n in range(len(graph.datas)) if trig[n] and not goal[n]]
    pending, _ = breadth_first(seeds, lambda n: [(a, m) for a, m in graph.succ[n] if not goal[m]])
    if not pending:
        return None
    comps = components(pending, lambda n: (m for _, m in graph.succ[n]))
    fair = [c for c in comps if _fair(graph, c)]
    if not fair:
        return None
    # the stems: breadth-first over (state, monitor) from the initial states
    stems, _ = breadth_first(
        [(n, trig[n] and not goal[n]) for n in graph.initial],
        lambda k: [(a, (m, not goal[m] and (k[1] or trig[m]))) for a, m in graph.succ[k[0]]],
    )
    dist = {n: d for (n, monitor), (d, _, _) in stems.items() if monitor}
    entries = [(min(comp, key=lambda n: dist.get(n, 1 << 60)), comp) for comp in fair]
    reachable = [(dist[entry], entry, comp) for entry, comp in entries if entry in dist]
    if not reachable:
        return None
    _, entry, comp = min(reachable, key=lambda r: r[0])
    (init_id, _), stem = path_to(stems, (entry, True))
    loop = _loop(graph, comp, entry)
    return [a for a, _ in stem], loop, init_id


def _fair(graph: Graph, comp: list[int]) -> bool:
    """Every instance enabled throughout ``comp`` is taken on an edge inside it."""
    inside = set(comp)
    enabled = [graph.fair_enabled(n) for n in comp]
    always = set.intersection(*(set(e) for e in enabled))
    return always <= {a for e in enabled for a, ms in e.items() if any(m in inside for m in ms)}


def _loop(graph: Graph, comp: list[int], entry: int) -> list[ActionInstance]:
    """A cycle from ``entry`` inside ``comp`` that takes every instance enabled throughout
    ``comp`` or visits a state disabling it, then returns to ``entry``."""
    inside = set(comp)
    enabled = {n: graph.fair_enabled(n) for n in comp}
    every = set().union(*(set(e) for e in enabled.values()))
    steps: list[ActionInstance] = []
    visited = {entry}
    taken: set[ActionInstance] = set()
    here = entry
    for ob in sorted(every, key=str):
        if ob in taken or any(ob not in enabled[v] for v in visited):
            continue
        disabling = {v for v in comp if ob not in enabled[v]}
        sources = disabling or {v for v in comp if any(m in inside for m in enabled[v][ob])}
        path, here = _path(graph, inside, here, sources)
        if not disabling:
            target = next(m for m in enabled[here][ob] if m in inside)
            path.append((ob, target))
            here = target
        for action, m in path:
            steps.append(action)
            taken.add(action)
            visited.add(m)
    if here != entry:
        path, here = _path(graph, inside, here, {entry})
        steps += [a for a, _ in path]
    return steps


def _path(
    graph: Graph, inside: set[int], src: int, targets: set[int]
) -> tuple[list[tuple[ActionInstance, int]], int]:
    """A shortest path inside the component from ``src`` to one of ``targets``."""
    succ = graph.succ
    reached, end = breadth_first(
        [src], lambda n: [(a, m) for a, m in succ[n] if m in inside], targets.__contains__
    )
    if end is None:
        raise ReplayError("lasso: the component is not strongly connected")
    return path_to(reached, end)[1], end
