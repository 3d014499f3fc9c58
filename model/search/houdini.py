"""Houdini, in one module: from candidate conjuncts to an inductive subset, three strategies.

Houdini (Flanagan and Leino, FME 2001) keeps the largest inductive subset of a set of
candidates by dropping every candidate some step breaks from a state satisfying all of
them. kvproof asks it three questions, each answered by the strategy that is fast for it:

- **classic** (``inductive_subset``): which safety invariants a subset of the protocol's own
  strengthening proves, by repeated runs of the prover (``induction.prove``), each dropping
  the conjunct its counterexample to induction broke. What survives is a real proof: a
  buggy variant's BMC stops once every invariant not proved has its counterexample, and
  asserts the surviving set at each step (``checker/verify/driver.py``);
- **goal-directed** (``houdini``): an inductive subset of hundreds of template candidates
  that proves safety, asking the solver with only the conjuncts the proof needs so far;
  over uninterpreted sorts (every size: ``infer.py``) or one finite instance (``complete.py``);
- **unsat-core** (``small_inductive``): a *small* inductive subset at one finite size, grown
  from safety by the unsat cores of propositional queries and shrunk by concrete walks
  (``infer.py``'s first step; the proof for every size stays ``induction.py``'s).

Every strategy re-runs each solver counterexample in the concrete interpreter (mypyvy's
``--smoke-test-solver``): one that does not replay is a ``ProofError``, never a result.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import z3

from kvproof.model.lang.concrete import State
from kvproof.model.lang.dsl import Protocol
from kvproof.model.search.bmc import Settlement
from kvproof.model.search.induction import ProofError, prove
from kvproof.model.search.step import Cex, Checker, ClauseTable, Conjunct, FiniteStep

_DEBUG = bool(os.environ.get("KVPROOF_DEBUG_HOUDINI"))

# -- classic: Houdini by repeated proof ------------------------------------------------------
# A buggy variant breaks some invariants, so its strengthening is no longer inductive as a
# whole (in mooncake-batch-failed-partial, ``inflight_held``, ``landed_is_fresh`` and
# ``sender_while_held`` fail once a batch's partial failure frees pages early). Whenever the
# prover's counterexample to induction breaks a conjunct from a state satisfying all the
# others, no inductive subset of the current set contains that conjunct: it is dropped and
# the prover runs again. Asserting the survivors in BMC removes no counterexample and prunes
# the deep queries (sglang-pd-decode-radix-race's depth-16 query: minutes without it).


def inductive_subset(
    protocol: Protocol, safety: tuple[str, ...] | None = None, *, max_proofs: int = 12
) -> Settlement:
    """The safety invariants (of ``safety``, default all) that a subset of ``protocol``'s
    strengthening proves, and that subset; gives up (proving nothing) after ``max_proofs``
    prover runs."""
    invs = [i for i in protocol.safety if safety is None or i.name in safety]
    others = tuple(i for i in protocol.invariants if not i.safety)
    strengthening = list(protocol.strengthening)
    for _ in range(max_proofs):
        if not invs:
            break
        trial = dataclasses.replace(
            protocol, invariants=(*invs, *others), strengthening=tuple(strengthening)
        )
        result = prove(trial)
        if result.proved:
            kept = tuple(i.name for i in (*trial.invariants, *trial.strengthening))
            return Settlement(frozenset(i.name for i in invs), kept)
        if result.cti is None:  # the solver answered unknown: nothing is settled
            break
        gone = result.cti.conjunct
        invs = [i for i in invs if i.name != gone]
        strengthening = [i for i in strengthening if i.name != gone]
    return Settlement(frozenset())


# -- goal-directed: only the conjuncts the proof needs so far --------------------------------
# Asking with hundreds of quantified candidates assumed is slow (seconds a query), so the
# loop asks with ``needed`` (at first the safety invariants) and settles each counterexample
# concretely: a pre-state that breaks a live candidate is not a state of the invariant (the
# shortest such candidate joins ``needed`` and blocks it); one that breaks none is Houdini's
# case, and every live candidate its post-state breaks is dropped. When no step breaks a
# needed conjunct from a state satisfying all of them, ``needed`` is inductive and, with the
# initial-state check, proves safety; a dropped safety invariant ends it with its CTI.


@dataclass(frozen=True)
class Closure:
    """What a Houdini strategy found: ``kept`` (inductive, implies safety) or the reason."""

    kept: list[Conjunct]
    live: list[Conjunct]
    queries: int
    dropped: int
    # "" when ``kept`` is inductive; else why not: "safety <name> dropped", "budget", ...
    reason: str = ""
    cti: Cex | None = None  # the counterexample that broke a safety invariant
    cti_conjunct: str | None = None

    @property
    def closed(self) -> bool:
        return not self.reason


class Lits:
    """Assumption literals for conjuncts in one step's solver, each made once."""

    def __init__(self, step: Any) -> None:
        self.step = step
        self.pre: dict[str, z3.BoolRef] = {}
        self.post: dict[str, z3.BoolRef] = {}

    def holds_before(self, c: Conjunct) -> z3.BoolRef:
        got = self.pre.get(c.name)
        if got is None:
            got = self.pre[c.name] = z3.Bool(f"pre:{c.name}")
            self.step.solver.add(z3.Implies(got, self.step.formula(c, post=False)))
        return got

    def broken_after(self, c: Conjunct) -> z3.BoolRef:
        got = self.post.get(c.name)
        if got is None:
            got = self.post[c.name] = z3.Bool(f"post-broken:{c.name}")
            self.step.solver.add(z3.Implies(got, z3.Not(self.step.formula(c, post=True))))
        return got

    def core(self) -> set[str]:
        """The conjuncts assumed before in the last unsat core."""
        return {str(x)[4:] for x in self.step.solver.unsat_core() if str(x).startswith("pre:")}


def houdini(
    steps: Sequence[Any],
    conjuncts: Sequence[Conjunct],
    checker: Checker,
    *,
    initially: Callable[[Conjunct], bool],
    deadline: float,
    needed_first: Sequence[str] = (),
) -> Closure:
    """Goal-directed Houdini over ``steps`` (each has ``solver``, ``formula``, ``cex``)."""
    start = time.perf_counter()
    live: dict[str, Conjunct] = {c.name: c for c in conjuncts}
    needed: list[str] = [c.name for c in conjuncts if c.safety]
    needed += [n for n in needed_first if n in live and n not in needed]
    safety = list(needed)
    lits = [Lits(step) for step in steps]
    posts: list[dict[str, Any]] = [{} for _ in steps]
    verified: set[tuple[int, str]] = set()
    queries = dropped = 0

    def result(reason: str = "", **kw: Any) -> Closure:
        kept = [live[n] for n in needed if n in live]
        return Closure(kept, list(live.values()), queries, dropped, reason, **kw)

    while True:
        bad_init = [n for n in needed if n not in safety and not initially(live[n])]
        for n in bad_init:
            del live[n]
            dropped += 1
        if bad_init:
            needed = [n for n in needed if n in live]
            verified.clear()
        todo = [(i, n) for i in range(len(steps)) for n in needed if (i, n) not in verified]
        if not todo:
            return result()
        if time.perf_counter() > deadline:
            return result("budget")
        i = todo[0][0]
        step = steps[i]
        frontier = [n for j, n in todo if j == i]
        pre = [lits[i].holds_before(live[n]) for n in needed]
        for n in frontier:
            if n not in posts[i]:
                posts[i][n] = step.formula(live[n], post=True)
        queries += 1
        goal = z3.Bool(f"goal#{queries}")
        step.solver.add(z3.Implies(goal, z3.Or(*(z3.Not(posts[i][n]) for n in frontier))))
        assumed = [goal, *pre]
        res = z3.unsat
        if step.small is not None:
            res = step.solver.check(step.small, *assumed)
        if res == z3.unsat:
            res = step.solver.check(*assumed)
        if _DEBUG:
            print(
                f"houdini q{queries} {res} needed={len(needed)} frontier={len(frontier)} "
                f"live={len(live)} t={time.perf_counter() - start:.1f}",
                file=sys.stderr,
            )
        if res == z3.unknown:
            return result(f"unknown: {step.solver.reason_unknown()}")
        if res == z3.unsat:
            verified.update((i, n) for n in frontier)
            continue
        cex = step.cex(step.solver.model())
        bad_pre = [c for c in live.values() if not checker.holds(c, cex.sizes, cex.pre)]
        if any(c.name in needed for c in bad_pre):
            raise ProofError(f"Houdini counterexample {cex.action}: pre-state breaks a needed one")
        if bad_pre:  # not a state of the invariant: the simplest blocking candidates join
            needed.append(min(bad_pre, key=lambda c: c.size).name)
            continue
        post = checker.post(cex)
        broken = [c for c in live.values() if not checker.holds(c, cex.sizes, post)]
        if not broken:
            raise ProofError(f"Houdini counterexample {cex.action} breaks no conjunct")
        lost = [c.name for c in broken if c.safety]
        if lost:
            return result(f"safety {lost[0]} dropped", cti=cex, cti_conjunct=lost[0])
        for c in broken:
            del live[c.name]
        dropped += len(broken)
        gone = {c.name for c in broken}
        needed = [n for n in needed if n not in gone]
        verified.clear()  # what was proved with a dropped conjunct is proved no more


# -- unsat-core: a small inductive subset on one finite instance ----------------------------
# ``FiniteStep``'s queries are propositional. ``live``: the candidates no Houdini
# counterexample has broken yet; ``kept``: the part of them a proof of safety uses. A
# conjunct joins ``kept`` when a kept one's consecution query needs it: "every live candidate
# before, this kept one broken after" is unsat, and its unsat core, shrunk by deletion (new
# candidates first, the longest first), names the new ones (asked first with only ``kept``
# assumed: usually enough). When that query is sat, its pre-state is a Houdini counterexample:
# every live candidate its post-state breaks is dropped, and a short concrete walk from it
# (``ClauseTable``: every candidate at once) drops in one query what would take dozens; the
# walk starts from the initial states too. A dropped kept conjunct restarts ``kept`` from
# safety; a broken safety invariant ends the search with its CTI. Why not ``houdini`` here:
# its counterexamples are not Houdini ones and it blocks each with one more conjunct (~120
# piled up on the handoff; the proof over uninterpreted sorts then took seconds per
# conjunct). Why not one query over every live candidate: its final unsat, a disjunction of
# ~400 broken post-states, took 19 s where 40 single ones take milliseconds each.


class _Live:
    """The live candidates as a mask, with every-candidate-at-once concrete evaluation."""

    def __init__(self, step: FiniteStep, conjuncts: Sequence[Conjunct]) -> None:
        self.concrete = step.concrete
        self.conjuncts = list(conjuncts)
        self.index = {c.name: i for i, c in enumerate(conjuncts)}
        self.clause_at = np.array(
            [i for i, c in enumerate(conjuncts) if c.clause is not None], dtype=np.int64
        )
        clauses = [conjuncts[i].clause for i in self.clause_at]
        self.table = ClauseTable(self.concrete, clauses)
        self.safety = [i for i, c in enumerate(conjuncts) if c.safety]
        self.mask = np.ones(len(conjuncts), dtype=bool)
        self.seen: set[Any] = set()  # states of the live invariant already expanded

    def broken(self, data: Any) -> np.ndarray:
        out = np.zeros(len(self.conjuncts), dtype=bool)
        out[self.clause_at] = self.table.broken(data)
        for i in self.safety:
            out[i] = not self.concrete.check(self.conjuncts[i].inv, State(data))
        return out & self.mask

    def alive(self, name: str) -> bool:
        return bool(self.mask[self.index[name]])

    def names(self) -> list[str]:
        return [self.conjuncts[i].name for i in np.flatnonzero(self.mask)]

    def walk(self, starts: list[Any], budget: int) -> tuple[Cex, str] | None:
        """Drop what successors of ``starts`` (states of the live invariant) break; a
        broken safety invariant returns the step that broke it."""
        queue = [d for d in starts if d not in self.seen]
        self.seen.update(queue)
        for _ in range(budget):
            if not queue:
                break
            data = queue.pop(0)
            for action, nxt in self.concrete.successor_data(data):
                if nxt in self.seen:
                    continue
                bad = self.broken(nxt)
                lost = [self.conjuncts[i].name for i in self.safety if bad[i]]
                if lost:
                    return Cex(dict(self.concrete.inst.sizes), State(data), action), lost[0]
                if bad.any():
                    self.mask[bad] = False
                else:
                    self.seen.add(nxt)
                    queue.append(nxt)
        return None


def small_inductive(
    step: FiniteStep, conjuncts: Sequence[Conjunct], *, deadline: float, walk: int = 40
) -> Closure:
    """A small inductive subset of ``conjuncts`` that contains (and so proves) safety."""
    lits = Lits(step)
    live = _Live(step, conjuncts)
    by_name = {c.name: c for c in conjuncts}
    solver = step.solver
    queries = 0

    def done(kept: list[str], reason: str = "", cti: tuple[Cex, str] | None = None) -> Closure:
        gone = len(conjuncts) - int(live.mask.sum())
        alive = [by_name[n] for n in live.names()]
        return Closure([by_name[n] for n in kept], alive, queries, gone, reason, *(cti or ()))

    inits = [s.data for s in step.concrete.initial_states()]
    for data in inits:
        bad = live.broken(data)
        broken_at_init = [conjuncts[i].name for i in live.safety if bad[i]]
        if broken_at_init:
            return done([], f"safety {broken_at_init[0]} fails initially")
        live.mask[bad] = False
    safety = [c.name for c in conjuncts if c.safety]
    kept: list[str] = []
    todo: list[str] = []
    lost = live.walk(inits, walk * 10)
    while lost is None:
        if not all(live.alive(n) for n in kept):  # a kept one was dropped: start again
            kept = []
        if not kept:
            kept, todo = list(safety), list(safety)
        if not todo:
            return done(kept)
        if time.perf_counter() > deadline:
            return done(kept, "budget")
        name = todo[0]
        goal = lits.broken_after(by_name[name])
        queries += 1
        if solver.check(goal, *(lits.holds_before(by_name[n]) for n in kept)) == z3.unsat:
            todo.pop(0)
            continue
        queries += 1
        assumed = [lits.holds_before(by_name[n]) for n in live.names()]
        res = solver.check(goal, *assumed)
        if res == z3.unknown:
            return done(kept, f"unknown: {solver.reason_unknown()}")
        if res == z3.sat:
            cex = step.cex(solver.model())
            if live.broken(cex.pre.data).any():  # the solver's pre-state, re-checked
                raise ProofError(f"Houdini counterexample {cex.action}: pre breaks a live one")
            before = int(live.mask.sum())
            live.seen.discard(cex.pre.data)
            lost = live.walk([cex.pre.data], walk)
            if lost is None and int(live.mask.sum()) == before:
                raise ProofError(f"Houdini counterexample {cex.action} breaks no conjunct")
            continue
        todo.pop(0)
        new = lits.core() - set(kept)
        for n in sorted(new, key=lambda n: (-by_name[n].size, n)):
            if n not in new:
                continue
            queries += 1
            trial = [lits.holds_before(by_name[m]) for m in (*kept, *sorted(new - {n}))]
            if solver.check(goal, *trial) == z3.unsat:
                new = lits.core() - set(kept)
        for n in sorted(new, key=lambda n: (by_name[n].size, n)):
            kept.append(n)
            todo.append(n)
    cex, name = lost
    return done([], f"safety {name} dropped", (cex, name))
