"""Complete checking at a fixed size: every depth, no bound (``kvproof check --complete``).

At fixed numbers of elements a protocol is a finite transition system, so "holds for every
depth" is decidable. Four methods, cheapest first, each complete when it finishes:

0. the protocol's unbounded proof (``model/search/induction.py``, when it has a strengthening): an
   inductive invariant over uninterpreted sorts holds at every size, so at this one too; it
   is reported as such (method ``proof``), and is the fast path for fixed variants, whose
   instances BFS cannot exhaust (3 Req / 4 Page: 17 GB after 12 min);
1. explicit-state BFS (``explore``, compiled interpreter, page symmetry) under a small
   budget: a small instance is exhausted in a second, and BFS gives a shortest trace;
2. an inductive invariant *of this instance*: goal-directed Houdini (``houdini.py``)
   over ``FiniteStep`` (every cell a constant, a propositional query), with the template
   candidates of ``model/search/infer.py``; a closed set that holds in every initial state (checked
   concretely) and implies safety proves it for every depth at this size;
3. otherwise bounded model checking deepened one step at a time until a counterexample,
   which is then a shortest one however long, replayed by the concrete interpreter.

When the budget runs out first, the verdict is ``unknown`` and says what would decide it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import z3

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import ReplayError, Trace, replay
from kvproof.model.lang.unroll import Unroller
from kvproof.model.search.candidates import DEFAULT_TEMPLATES, candidates
from kvproof.model.search.houdini import houdini
from kvproof.model.search.induction import prove
from kvproof.model.search.infer import sample_states
from kvproof.model.search.step import Checker, Conjunct, FiniteStep


@dataclass(frozen=True)
class CompleteResult:
    verdict: str  # "holds" | "violated" | "unknown"
    sizes: dict[str, int]
    method: str  # "proof" | "explore" | "invariant" | "bmc" | "" (unknown)
    seconds: float
    states: int | None = None  # explicit states (explore), when it finished
    # the sorts explore quotiented by: ``states`` then counts one state per orbit
    symmetry: tuple[str, ...] | None = None
    depth: int | None = None  # the shortest counterexample's length, or BMC's last depth
    trace: Trace | None = None
    trace_states: tuple[State, ...] = ()  # ``trace``'s states, derived once where re-checked
    conjuncts: int | None = None  # size of the invariant of this instance
    note: str = ""

    @property
    def summary(self) -> str:
        where = " / ".join(f"{n} {s}" for s, n in self.sizes.items())
        if self.verdict == "holds":
            how = ": proved for every size and depth" if self.method == "proof" else ""
            return f"holds at {where} for every depth{how} ({self.method}, {self.seconds:.1f} s)"
        if self.verdict == "violated":
            return (
                f"{self.trace.violated if self.trace else 'an invariant'} violated at {where}: "
                f"shortest counterexample {self.depth} steps ({self.method}, {self.seconds:.1f} s)"
            )
        return f"unknown at {where}: {self.note}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "verdict": self.verdict,
            "sizes": self.sizes,
            "method": self.method,
            "seconds": round(self.seconds, 3),
            "summary": self.summary,
        }
        if self.trace is not None and self.trace.violated:
            out["violated"] = self.trace.violated
        for key in ("states", "depth", "conjuncts"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.symmetry is not None:
            out["symmetry"] = list(self.symmetry)
        if self.note:
            out["note"] = self.note
        return out


def check_complete(
    protocol: Protocol,
    sizes: dict[str, int],
    *,
    budget_s: float = 60.0,
    explore_s: float = 2.0,
    variant: str = "",
    proof: bool = True,
    proved: Any = None,
) -> CompleteResult:
    """``proof=False`` skips method 0 (to exercise, or measure, the finite methods);
    ``proved``: this protocol's ``ProofResult`` when the caller already has one (``check``
    proves fixed variants anyway), so that it is not asked twice."""
    from kvproof.model.search.explore import explore

    start = time.perf_counter()
    deadline = start + budget_s
    base = dataclasses.replace(protocol, strengthening=())

    def done(verdict: str, method: str, **kw: Any) -> CompleteResult:
        return CompleteResult(verdict, dict(sizes), method, time.perf_counter() - start, **kw)

    # 0. the unbounded proof; a failed one only costs its queries (under a second here)
    if proof and not (proved and proved.proved) and protocol.strengthening:
        left_ms = max(1, min(60_000, int(budget_s * 250)))  # a query: at most budget/4
        proved = prove(protocol, timeout_ms=left_ms)
    if proof and proved and proved.proved:
        return done("holds", "proof", conjuncts=len(proved.conjuncts))

    # 1. explicit state, briefly
    # every sort the protocol declares symmetric (its own vocabulary: generic code knows
    # no sort by name); the quotient keeps verdicts and shortest lengths (symmetry.py)
    sym = tuple(s for s in base.symmetric if sizes.get(s, 0) > 1)[:2]
    ex = explore(base, sizes, variant=variant, symmetry=sym, max_seconds=min(explore_s, budget_s))
    if ex.counterexamples:
        trace = min(ex.counterexamples.values(), key=len)
        return done(
            "violated", "explore", depth=len(trace), trace=trace, states=ex.states, symmetry=sym
        )
    if not ex.truncated:
        return done("holds", "explore", states=ex.states, symmetry=sym)
    # 2. an inductive invariant of this instance, from the templates
    small = {s: min(n, DEFAULT_TEMPLATES.per_sort) for s, n in sizes.items()}
    datas = sample_states(base, small)
    clauses = candidates(base, Concrete(Instance(base, small)), datas)
    conjuncts = [Conjunct(i.name, i) for i in base.safety] + [
        Conjunct(f"c{n}", c.invariant(f"c{n}"), c) for n, c in enumerate(clauses)
    ]
    checker = Checker(base)
    concrete = checker.get(sizes).concrete
    inits = list(concrete.initial_states())
    step = FiniteStep(base, sizes)
    h = houdini(
        [step],
        conjuncts,
        checker,
        initially=lambda c: all(checker.holds(c, sizes, s) for s in inits),
        deadline=start + budget_s * 0.5,
    )
    if h.closed:
        return done("holds", "invariant", conjuncts=len(h.kept))
    # 3. BMC, deepened until a counterexample (its own function: its solver and unrollings
    # are freed before this one's, and Z3 reuses freed terms' numbers, so a later search in
    # this process asks the same question as before)
    return _deepen(base, sizes, deadline, variant, done, budget_s)


def _deepen(
    protocol: Protocol,
    sizes: dict[str, int],
    deadline: float,
    variant: str,
    done: Any,
    budget_s: float,
) -> CompleteResult:
    inst = Instance(protocol, sizes)
    concrete = Concrete(inst)
    unroller = Unroller(inst)
    solver = unroller.solver
    k = 0
    while time.perf_counter() < deadline:
        ctx = unroller.ctx(k)
        bad = unroller.logic.or_(*(unroller.logic.not_(i.body(ctx)) for i in protocol.safety))
        if bad is not False:
            lit = z3.Bool(f"complete_bad@{k}")
            solver.add(z3.Implies(lit, bad))
            solver.set("timeout", max(1, int((deadline - time.perf_counter()) * 1000)))
            res = solver.check(lit)
            if res == z3.sat:
                init, steps = unroller.trace_from_model(solver.model(), k)
                states = replay(Trace(variant, dict(sizes), init, tuple(steps)), concrete)
                broken = concrete.violated(states[-1])
                if not broken:
                    raise ReplayError("complete: the BMC counterexample does not replay")
                trace = Trace(variant, dict(sizes), init, tuple(steps), violated=broken[0])
                return done("violated", "bmc", depth=k, trace=trace, trace_states=tuple(states))
            if res == z3.unknown:
                break
        unroller.extend()
        k += 1
    searched = f"no counterexample to depth {k - 1}" if k else "no BMC depth reached"
    note = (
        f"{searched} and no invariant of this instance found in the {budget_s:g} s budget; "
        f"a larger budget may decide it (e.g. --budget {budget_s * 4:g})"
    )
    return done("unknown", "", depth=max(k - 1, 0), note=note)
