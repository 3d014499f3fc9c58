"""From all template candidates to a small inductive invariant, on one finite instance.

``small_inductive`` asks propositional queries of ``FiniteStep`` (every cell of a
3-element instance a constant) and keeps two sets: ``live``, the candidates no Houdini
counterexample has broken yet, and ``kept``, the part of them a proof of safety uses.

- A conjunct joins ``kept`` when a kept one's consecution query needs it: the query
  "every live candidate in the pre-state, this kept one broken in the post-state" is
  unsat, and its unsat core, shrunk by deletion (new candidates first, the longest
  first; kept ones stay assumed, they cost nothing), names the new ones. Asked first with
  only ``kept`` assumed: usually enough, and then nothing joins.
- When that query is sat, its pre-state satisfies every live candidate, so it is a Houdini
  counterexample (Flanagan and Leino): every live candidate its post-state breaks is
  dropped. Its successors that break nothing are states of the invariant too, so a short
  concrete walk from it (compiled interpreter, every candidate at once, ``ClauseTable``)
  drops in one query what would take dozens. The walk also starts from the initial states
  (reachable: any candidate they break is out). A dropped kept conjunct restarts ``kept``
  from safety (what it justified is justified no more); a broken safety invariant ends the
  search with that counterexample as the CTI.

When every kept conjunct's query is unsat, ``kept`` is inductive at this size and implies
safety (each kept conjunct follows, after any step, from kept ones). Why not the loop of
``goal.py`` (goal-directed): it assumes only the conjuncts needed so far, so a counterexample
there is no Houdini one and it blocks it with one more conjunct; on the handoff ~120 piled
up and the final proof over uninterpreted sorts took seconds per conjunct. Why not one
query over every live candidate (Houdini proper): its final unsat, a disjunction of ~400
broken post-states, took 19 s where 40 single ones take milliseconds each. The proof for
every size stays ``model/search/induction.py``'s (``model/search/infer.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import z3

from kvproof.model.lang.concrete import State
from kvproof.model.search.clause_table import ClauseTable
from kvproof.model.search.houdini.conjunct import Conjunct
from kvproof.model.search.induction import ProofError
from kvproof.model.search.step import Cex, FiniteStep


@dataclass(frozen=True)
class Closure:
    """What ``small_inductive`` found: ``kept`` (inductive, implies safety) or the reason."""

    kept: list[Conjunct]
    live: list[Conjunct]
    queries: int
    dropped: int
    reason: str = ""  # "" when ``kept`` is inductive at this size; else why not
    cti: Cex | None = None  # the counterexample that broke a safety invariant
    cti_conjunct: str | None = None

    @property
    def closed(self) -> bool:
        return not self.reason


class Lits:
    """Assumption literals for conjuncts in one step's solver, each made once."""

    def __init__(self, step: FiniteStep) -> None:
        self.step = step
        self.pre: dict[str, z3.BoolRef] = {}
        self.post: dict[str, z3.BoolRef] = {}
        self.by_lit: dict[int, str] = {}  # a literal's Z3 id -> its conjunct

    def holds_before(self, c: Conjunct) -> z3.BoolRef:
        got = self.pre.get(c.name)
        if got is None:
            got = self.pre[c.name] = z3.Bool(f"pre:{c.name}")
            self.step.solver.add(z3.Implies(got, self.step.formula(c, post=False)))
            self.by_lit[got.get_id()] = c.name
        return got

    def broken_after(self, c: Conjunct) -> z3.BoolRef:
        got = self.post.get(c.name)
        if got is None:
            got = self.post[c.name] = z3.Bool(f"post-broken:{c.name}")
            self.step.solver.add(z3.Implies(got, z3.Not(self.step.formula(c, post=True))))
        return got

    def core(self) -> set[str]:
        ids = (x.get_id() for x in self.step.solver.unsat_core())
        return {self.by_lit[i] for i in ids if i in self.by_lit}


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
    step: FiniteStep,
    conjuncts: Sequence[Conjunct],
    *,
    deadline: float,
    walk: int = 40,
) -> Closure:
    """A small inductive subset of ``conjuncts`` that contains (and so proves) safety."""
    lits = Lits(step)
    live = _Live(step, conjuncts)
    by_name = {c.name: c for c in conjuncts}
    solver = step.solver
    queries = 0

    def done(kept: list[str], reason: str = "", cti: tuple[Cex, str] | None = None) -> Closure:
        return Closure(
            [by_name[n] for n in kept],
            [by_name[n] for n in live.names()],
            queries,
            len(conjuncts) - int(live.mask.sum()),
            reason,
            *(cti or (None, None)),
        )

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
