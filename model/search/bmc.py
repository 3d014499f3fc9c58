"""Bounded model checking with Z3: shortest counterexamples, re-checked concretely.

The transition relation is unrolled one step at a time on one incremental solver; at each
depth k every invariant still unresolved is checked under an assumption literal, so the
first counterexample found for an invariant is a shortest one. Every counterexample is
replayed by the concrete interpreter before it is reported: a model that does not replay
is an internal error (``ReplayError``), never a result.

Primary traces: when the shortest counterexample of an invariant runs through an earlier
violation of another invariant (e.g. a stray write before a stale read), the search goes on
for the shortest trace whose earlier states satisfy every invariant, so that each reported
trace shows its own root cause (spec/handoff.md, "Invariants").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import z3

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import ReplayError, Trace, replay
from kvproof.model.lang.unroll import Unroller
from kvproof.model.search.steady import steady


@dataclass(frozen=True)
class Settlement:
    """A proof's answer to a running BMC: the safety invariants it proved (they hold at every
    depth and size) and the conjuncts of its inductive invariant, by name (invariants or
    strengthening of the protocol), which every reachable state satisfies."""

    proved: frozenset[str]
    inductive: tuple[str, ...] = ()


# settled(k, unresolved, last) -> a proof's answer, or None (not known yet)
Settled = Callable[[int, frozenset[str], bool], "Settlement | None"]


@dataclass(frozen=True)
class InvariantResult:
    invariant: str
    holds: bool  # no violation up to the depth
    depth: int  # depth reached (holds) or the counterexample's length
    trace: Trace | None = None
    shortest: int | None = None  # length of the shortest counterexample (plain)
    primary: bool = True  # the trace's earlier states satisfy every invariant
    seconds: float = 0.0
    # Every state of ``trace`` (initial first), derived once where the counterexample is
    # re-checked: what reports draw and explain, so that nothing replays it again.
    states: tuple[State, ...] = ()


@dataclass(frozen=True)
class BmcResult:
    variant: str
    sizes: dict[str, int]
    depth: int
    results: tuple[InvariantResult, ...]
    seconds: float
    stats: dict[str, float] = field(default_factory=dict)
    # Invariants a proof settled (``settled`` below): they hold at every depth and size,
    # though the search stopped at ``depth``.
    proved: tuple[str, ...] = ()

    @property
    def holds(self) -> bool:
        return all(r.holds for r in self.results)

    def result(self, name: str) -> InvariantResult:
        return next(r for r in self.results if r.invariant == name)


@steady
def bmc(
    protocol: Protocol,
    sizes: dict[str, int],
    depth: int,
    *,
    variant: str = "",
    invariants: Sequence[str] | None = None,
    primary: bool = True,
    on_depth: Callable[[int], None] | None = None,
    stop_at_first: bool = False,
    lemmas: bool = True,
    settled: Settled | None = None,
) -> BmcResult:
    """Check every safety invariant (or those named) up to ``depth`` steps.

    ``stop_at_first``: stop at the first depth where some invariant breaks (the others
    are then reported as holding to that depth only): enough to show an assumption is
    needed.

    ``settled(k, unresolved, last)``, asked after each depth, may answer what a proof has
    settled (``checker/verify/driver.py``'s ``BackgroundSubset``); the search then ends at
    the first depth where every invariant still unresolved is among the proved ones. That
    depth depends only on the answer, never on when it arrives, and stopping there drops no
    query before it. The answer's inductive invariant is asserted at every step from then
    on: it holds in every reachable state, so it removes no counterexample (no verdict, no
    shortest length changes) while it prunes the deep unsatisfiable queries; Z3 may then
    pick another, equally short, trace, so a hook answers at a depth fixed in advance
    (``checker/verify/plan.py``)."""
    start = time.perf_counter()
    inst = Instance(protocol, sizes)
    concrete = Concrete(inst)
    unroller = Unroller(inst)
    solver = unroller.solver
    invs = [i for i in protocol.safety if invariants is None or i.name in invariants]
    names = {i.name for i in invs}
    plain: dict[str, InvariantResult] = {}
    best: dict[str, InvariantResult] = {}
    clean_lits: list[z3.BoolRef] = []
    known: list[Invariant] = []  # the proof's inductive invariant, asserted at every step

    def assert_known(j: int) -> None:
        ctx = unroller.ctx(j)
        for inv in known:
            body = inv.body(ctx)
            if body is not True:
                solver.add(body)

    def clean_upto(k: int) -> None:
        """Literals c_j -> every invariant holds at state j, for j < k."""
        while len(clean_lits) < k:
            j = len(clean_lits)
            lit = z3.Bool(f"clean@{j}")
            ctx = unroller.ctx(j)
            body = unroller.logic.and_(*(i.body(ctx) for i in protocol.safety))
            if body is not True:
                solver.add(z3.Implies(lit, body))
            clean_lits.append(lit)

    def attempt(inv_name: str, k: int, need_clean: bool) -> tuple[Trace, tuple[State, ...]] | None:
        inv = protocol.invariant(inv_name)
        bad = unroller.logic.not_(inv.body(unroller.ctx(k)))
        if bad is False:
            return None
        lit = z3.Bool(f"bad:{inv_name}@{k}:{int(need_clean)}")
        solver.add(z3.Implies(lit, bad))
        assumptions = [lit]
        if need_clean:
            clean_upto(k)
            assumptions += clean_lits[:k]
        if solver.check(*assumptions) != z3.sat:
            return None
        init, steps = unroller.trace_from_model(solver.model(), k)
        trace = Trace(variant, dict(sizes), init, tuple(steps), violated=inv_name)
        # the solver's counterexample must replay and end in a violation of ``inv``; its
        # states: the one replay a reported counterexample gets
        states = replay(trace, concrete)
        if concrete.check(inv, states[-1]):
            raise ReplayError(
                f"solver counterexample for {inv_name} replays but its last state satisfies it"
            )
        return trace, tuple(states)

    def any_violation(k: int, pending: list[str]) -> bool:
        """One query for every pending invariant at depth k (most depths are unsat)."""
        ctx = unroller.ctx(k)
        bad = unroller.logic.or_(
            *(unroller.logic.not_(protocol.invariant(n).body(ctx)) for n in pending)
        )
        if bad is False:
            return False
        lit = z3.Bool(f"any@{k}")
        solver.add(z3.Implies(lit, bad))
        if solver.check(lit) == z3.sat:
            return True
        settle(k, pending)
        return False

    def settle(k: int, held: list[str]) -> None:
        """No trace of k steps breaks ``held``, so every state at step k of a longer trace
        satisfies them (it is reachable in k steps): asserting that prunes the deeper
        queries without removing any counterexample (the classic BMC strengthening)."""
        if not lemmas:
            return
        ctx = unroller.ctx(k)
        body = unroller.logic.and_(*(protocol.invariant(n).body(ctx) for n in held))
        if body is not True:
            solver.add(body)

    def violation(
        name: str, k: int, found: tuple[Trace, tuple[State, ...]], shortest: int | None, first: bool
    ) -> InvariantResult:
        took = time.perf_counter() - start
        return InvariantResult(name, False, k, found[0], shortest, first, took, found[1])

    unresolved_at: list[frozenset[str]] = []  # after each depth: names without a trace
    proved: frozenset[str] = frozenset()
    stop: int | None = None
    k = 0
    while True:
        if on_depth:
            on_depth(k)
        pending = [n for n in sorted(names) if n not in plain]
        if len(pending) > 1 and not any_violation(k, pending):
            pending = []
        for name in sorted(names):
            if name in best or (name not in plain and name not in pending):
                continue
            if name not in plain:
                found = attempt(name, k, need_clean=False)
                if found is None:
                    settle(k, [name])
                    continue
                is_primary = all(not concrete.violated(s) for s in found[1][:-1])
                plain[name] = violation(name, k, found, k, is_primary)
                if is_primary or not primary:
                    best[name] = plain[name]
                    continue
            found = attempt(name, k, need_clean=True)
            if found is not None:
                best[name] = violation(name, k, found, plain[name].shortest, True)
        if len(best) == len(names) or k >= depth or (stop_at_first and best):
            break
        unresolved_at.append(frozenset(names - set(best)))
        if settled is not None:
            answer = settled(k, unresolved_at[-1], k + 1 >= depth)
            if answer is not None:
                proved = answer.proved & names
                known = [protocol.invariant(n) for n in answer.inductive]
                for j in range(unroller.depth + 1):
                    assert_known(j)
                settled = None  # answered once
        if proved:
            stop = next((j for j, u in enumerate(unresolved_at) if u <= proved), None)
        if stop is not None:
            break
        unroller.extend()
        k += 1
        assert_known(k)
    if stop is not None:
        k = stop
    results = [
        best.get(i.name)
        or plain.get(i.name)
        or InvariantResult(i.name, True, min(k, depth), seconds=time.perf_counter() - start)
        for i in invs
    ]
    return BmcResult(
        variant,
        dict(sizes),
        depth if stop is None else stop,
        tuple(results),
        time.perf_counter() - start,
        stats={"unrolled": float(unroller.depth)},
        proved=tuple(sorted(proved)),
    )
