"""Houdini, goal-directed: an inductive subset of the candidates that proves safety.

Flanagan and Leino's Houdini keeps the largest inductive subset of the candidates by
dropping, again and again, every candidate some step breaks from a state satisfying all of
them. Asking the solver with hundreds of quantified candidates assumed is slow (seconds a
query here), so the loop asks with only the conjuncts the proof needs so far (``needed``,
at first the safety invariants), and settles each counterexample concretely:

- the counterexample's pre-state breaks some live candidate: it is not a state of the
  invariant; the shortest such candidates join ``needed`` (they block it);
- it breaks none: it is a real counterexample to induction of the live set (Houdini's
  case), and every live candidate its post-state breaks is dropped.

When no step breaks any needed conjunct from a state satisfying all of them, ``needed`` is
inductive: with the initial-state check, an inductive invariant that implies safety. If a
safety invariant is dropped, the candidates cannot prove it, and the counterexample that
dropped it is the CTI to report. Every solver counterexample is re-run by the concrete
interpreter (mypyvy's ``--smoke-test-solver``): one that does not replay is a
``ProofError``, never a result.

The steps are ``model/search/step.py``'s: uninterpreted sorts (a proof for every size) or one
finite instance (a proof for that size, every depth: ``check --complete``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from kvproof.model.search.houdini.conjunct import Checker, Conjunct
from kvproof.model.search.induction import ProofError
from kvproof.model.search.step import Cex

_DEBUG = bool(os.environ.get("KVPROOF_DEBUG_HOUDINI"))


@dataclass
class HoudiniResult:
    live: list[Conjunct]  # the candidates not dropped
    needed: list[Conjunct]  # inductive and implies safety when ``proved``
    proved: bool
    queries: int
    dropped: int
    seconds: float
    reason: str = ""  # why not proved: "safety <name> dropped", "budget", "unknown"
    cti: Cex | None = None  # the counterexample that dropped a safety invariant
    cti_conjunct: str | None = None
    timeline: dict[str, float] = field(default_factory=dict)


def houdini(
    steps: Sequence[Any],
    conjuncts: Sequence[Conjunct],
    checker: Checker,
    *,
    initially: Callable[[Conjunct], bool],
    deadline: float,
    needed_first: Sequence[str] = (),
) -> HoudiniResult:
    """Goal-directed Houdini over ``steps`` (each has ``solver``, ``formula``, ``cex``)."""
    start = time.perf_counter()
    live: dict[str, Conjunct] = {c.name: c for c in conjuncts}
    needed: list[str] = [c.name for c in conjuncts if c.safety]
    needed += [n for n in needed_first if n in live and n not in needed]
    safety = list(needed)
    lits: list[dict[str, Any]] = [{} for _ in steps]
    posts: list[dict[str, Any]] = [{} for _ in steps]
    verified: set[tuple[int, str]] = set()
    queries = dropped = 0

    def result(proved: bool, reason: str = "", **kw: Any) -> HoudiniResult:
        return HoudiniResult(
            list(live.values()),
            [live[n] for n in needed if n in live],
            proved,
            queries,
            dropped,
            time.perf_counter() - start,
            reason,
            **kw,
        )

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
            return result(True)
        if time.perf_counter() > deadline:
            return result(False, "budget")
        i = todo[0][0]
        step = steps[i]
        frontier = [n for j, n in todo if j == i]
        for n in needed:
            if n not in lits[i]:
                lit = z3.Bool(f"pre:{n}")
                step.solver.add(z3.Implies(lit, step.formula(live[n], post=False)))
                lits[i][n] = lit
        for n in frontier:
            if n not in posts[i]:
                posts[i][n] = step.formula(live[n], post=True)
        queries += 1
        goal = z3.Bool(f"goal#{queries}")
        step.solver.add(z3.Implies(goal, z3.Or(*(z3.Not(posts[i][n]) for n in frontier))))
        assumed = [goal, *(lits[i][n] for n in needed)]
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
            return result(False, f"unknown: {step.solver.reason_unknown()}")
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
            return result(False, f"safety {lost[0]} dropped", cti=cex, cti_conjunct=lost[0])
        for c in broken:
            del live[c.name]
        dropped += len(broken)
        gone = {c.name for c in broken}
        needed = [n for n in needed if n not in gone]
        verified.clear()  # what was proved with a dropped conjunct is proved no more
