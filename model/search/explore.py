"""Explicit-state breadth-first search of a finite instance (TLC/SPIN style).

Every reachable state of ``Concrete(inst)`` from every initial state, level by level, so
the first state found violating an invariant ends a shortest counterexample, the same
length BMC reports (``tests/model/search/test_explore.py`` checks both agree on every variant).
This is the slow baseline: it counts states and shows the state graph, where the Z3
proofs (``model/search/bmc.py``, induction) answer for any size without enumerating anything.

Definitions used in the report:

- **states / transitions**: distinct states found; enabled (state, action instance) pairs
  of the expanded states, self-loops included. With symmetry reduction both are counted
  on the quotient graph (one representative per orbit).
- **diameter**: the BFS depth, the largest shortest distance from an initial state (a
  lower bound when the search was truncated).
- **terminal**: an expanded state with no successor other than itself (every enabled
  action only stutters, e.g. a decode ``step`` that reads the same pages again).
- **deadlock**: a terminal state in which some request still holds a resource: a cell of
  one of the ``holding`` variables (default: the protocol's ``holding``; the handoff's are
  ``owns``, a decode page table entry, and ``inflight``, a posted write not landed) is
  true. A terminal state where every request is done and released everything is not a
  deadlock.

Symmetry reduction: states are canonicalised under permutations of the protocol's
symmetric sorts named in ``symmetry`` (default: the protocol's ``explore_symmetry``; the
handoff's is pages), exactly (``model/search/symmetry.py``). Invariants are symmetric, so
BFS distances to a violation are unchanged; counterexamples are mapped back to real runs
and replayed.

``stop_at_violation`` (as TLC does) does not expand violating states: each invariant's
shortest trace then has no earlier violation of any invariant, i.e. it is BMC's *primary*
trace (``InvariantResult.depth``), not its plain ``shortest``.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import ReplayError, Trace, initial_assignment, replay
from kvproof.model.search.symmetry import canonicaliser

Progress = Callable[[int, int, int], None]  # (states, depth, states left at this depth)


@dataclass(frozen=True)
class ExploreResult:
    variant: str
    sizes: dict[str, int]
    invariants: tuple[str, ...]  # the safety invariants checked, in protocol order
    states: int
    transitions: int
    initial: int
    diameter: int
    counterexamples: dict[str, Trace]  # invariant -> a shortest trace (absent: holds)
    violating: dict[str, int]  # invariant -> states violating it
    terminal: int
    deadlocks: int
    deadlock: Trace | None  # a shortest trace to a deadlock
    truncated: bool  # max_states or max_seconds ran out: counts are lower bounds
    symmetry: tuple[str, ...]
    stop_at_violation: bool
    seconds: float
    graph: nx.DiGraph | None = field(default=None, compare=False, repr=False)

    def holds(self, invariant: str) -> bool:
        """No reachable violation (in the explored part, when truncated)."""
        return invariant not in self.counterexamples

    def shortest(self, invariant: str) -> int | None:
        trace = self.counterexamples.get(invariant)
        return None if trace is None else len(trace)

    @property
    def violated(self) -> bool:
        return bool(self.counterexamples)


def explore(
    protocol: Protocol,
    sizes: dict[str, int],
    *,
    variant: str = "",
    symmetry: Sequence[str] | None = None,
    stop_at_violation: bool = False,
    until_found: bool = False,
    max_states: int | None = None,
    max_seconds: float | None = None,
    graph: bool = False,
    holding: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> ExploreResult:
    """Breadth-first search of every state reachable in the instance ``sizes``.

    ``graph``: also build the state graph (networkx ``DiGraph``: nodes are state ids in
    discovery order with attributes ``state``, ``depth``, ``violated``, ``deadlock``;
    edges carry ``actions``, the instances leading there), for ``--dot``/``--graphml``.
    ``until_found``: stop as soon as every invariant has a counterexample (a witness
    search: the traces are the ones the whole search reports, since states are numbered
    in the same order; the counts are then lower bounds, ``truncated`` is true).
    Ids rather than ``State`` nodes keep exports readable. The result is plain data, graph
    included (it pickles across worker processes): it holds no protocol, so a renderer that
    names cells takes the protocol as an argument (``checker/render/explore_graph.py``).
    """
    start = time.perf_counter()
    symmetry = protocol.explore_symmetry if symmetry is None else symmetry
    holding = protocol.holding if holding is None else holding
    inst = Instance(protocol, sizes)
    concrete = Concrete(inst)
    sym = tuple(s for s in symmetry if sizes.get(s, 0) > 1)
    for s in sym:
        if s not in protocol.symmetric:
            raise ValueError(f"sort {s!r} is not symmetric in {protocol.name}")
    canon = canonicaliser(concrete, sym)
    after = canon.after  # type: ignore[attr-defined]  # (parent, successor) -> representative
    succ = concrete.successor_fn()
    broken_in = concrete.violations()
    names = tuple(i.name for i in protocol.safety)
    holders = [concrete.inst.var_index[v] for v in holding if v in concrete.inst.var_index]

    # The state table: ids maps a representative to its number; per number its data, its
    # BFS parent and the action from there, its depth. Parents are a machine-int array
    # (half a million states at the radix witness: no int object per entry).
    ids: dict[Any, int] = {}
    datas: list[Any] = []
    parent = array("q")
    via: list[ActionInstance | None] = []
    dist: list[int] = []
    first: dict[str, int] = {}
    violating = dict.fromkeys(names, 0)
    bad: set[int] = set()
    edges: list[tuple[int, int, ActionInstance]] = []

    def judge(nid: int, data: Any) -> None:
        broken = broken_in(data)
        if broken:
            bad.add(nid)
            for name in broken:
                violating[name] += 1
                first.setdefault(name, nid)

    for init in concrete.initial_states():
        data = canon(init.data)
        if data not in ids:
            ids[data] = len(datas)
            datas.append(data)
            parent.append(-1)
            via.append(None)
            dist.append(0)
            judge(len(datas) - 1, data)
    initial = len(datas)

    # The hot loop (issue #30: the witness search expands ~400k states, 1.6M transitions):
    # bound methods are looked up once, a new state is hashed once for lookup and insert
    # (``setdefault``), and the target is tested on raw data.
    lookup = ids.get
    row: Callable[[Any, Any], Any] = {}.setdefault
    store, link, label, deep = datas.append, parent.append, via.append, dist.append
    transitions = terminal = 0
    deadlocked: list[int] = []
    level_end = initial  # the ids of the level being expanded end here
    depth = 0
    truncated = False
    sid = 0
    found_all = until_found and len(first) == len(names)
    while sid < len(datas) and not found_all:
        if sid == level_end:
            depth += 1
            level_end = len(datas)
        if max_states is not None and len(datas) >= max_states:
            truncated = True
            break
        if max_seconds is not None and sid % 512 == 0 and time.perf_counter() - start > max_seconds:
            truncated = True
            break
        if progress is not None and sid % 4096 == 0:
            progress(len(datas), depth, level_end - sid)
        data = datas[sid]
        if stop_at_violation and sid in bad:
            sid += 1
            continue
        moved = False
        below = depth + 1
        for action, nxt in succ(data):
            transitions += 1
            # A successor already stored as a representative needs no canonical form.
            nid = lookup(nxt)
            if nid is None:
                rep = after(data, nxt)
                if rep is not nxt:
                    nxt = rep
                    nid = lookup(nxt)
            if nid is None:
                # Rows interned: states share them (half the memory, rows hot in cache).
                nxt = tuple(map(row, nxt, nxt))
                nid = ids[nxt] = len(datas)
                store(nxt)
                link(sid)
                label(action)
                deep(below)
                if broken_in(nxt):
                    judge(nid, nxt)
                    if until_found and len(first) == len(names):
                        found_all = truncated = True
            if nid != sid:
                moved = True
            if graph:
                edges.append((sid, nid, action))
            if found_all:
                break
        if not moved:
            terminal += 1
            if any(any(data[i]) for i in holders):
                deadlocked.append(sid)
        sid += 1
    diameter = dist[-1] if dist else 0  # BFS: the last state found is a deepest one
    if progress is not None:
        progress(len(datas), diameter, 0)

    def trace_to(nid: int, violated: str | None) -> Trace:
        """A real run to state ``nid`` (un-doing symmetry reduction), replayed and checked."""
        path = []
        while parent[nid] >= 0:
            path.append(nid)
            nid = parent[nid]
        state = State(datas[nid])
        steps: list[ActionInstance] = []
        for target in reversed(path):
            # The recorded action ran from the representative; from the real state the
            # permuted action does the same: find the one landing in the target's orbit.
            options = [
                (a, s) for a, s in concrete.successors(state) if canon(s.data) == datas[target]
            ]
            if not options:
                raise ReplayError(f"explore: no step from the trace's state into state {target}")
            action, state = next((o for o in options if o[0] == via[target]), options[0])
            steps.append(action)
        init = initial_assignment(concrete, State(datas[nid]))
        trace = Trace(variant, dict(sizes), init, tuple(steps), violated, {"source": "explore"})
        last = replay(trace, concrete)[-1]  # a deadlock's trace is replayed too
        if violated is not None and violated not in concrete.violated(last):
            raise ReplayError(f"explore: the trace for {violated} does not end in a violation")
        return trace

    counterexamples = {name: trace_to(first[name], name) for name in names if name in first}
    deadlock = trace_to(deadlocked[0], None) if deadlocked else None
    g = nx.DiGraph() if graph else None
    if g is not None:
        dead = set(deadlocked)
        for nid, p in enumerate(parent):
            state = State(datas[nid])
            violated = tuple(concrete.violated(state)) if nid in bad else ()
            g.add_node(
                nid,
                state=state,
                depth=dist[nid],
                initial=p < 0,
                violated=violated,
                deadlock=nid in dead,
            )
        for src, dst, action in edges:
            if g.has_edge(src, dst):
                g.edges[src, dst]["actions"] += (action,)
            else:
                g.add_edge(src, dst, actions=(action,))
    return ExploreResult(
        variant=variant,
        sizes=dict(sizes),
        invariants=names,
        states=len(datas),
        transitions=transitions,
        initial=initial,
        diameter=diameter,
        counterexamples=counterexamples,
        violating=violating,
        terminal=terminal,
        deadlocks=len(deadlocked),
        deadlock=deadlock,
        truncated=truncated,
        symmetry=sym,
        stop_at_violation=stop_at_violation,
        seconds=time.perf_counter() - start,
        graph=g,
    )
