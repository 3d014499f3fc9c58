"""Invariant inference: ``kvproof prove`` for a protocol that brings no strengthening.

1. sample: every reachable state of a small instance (``explore``, two elements per sort);
2. candidates: template clauses no sampled state breaks (``model/candidates.py``);
3. Houdini over uninterpreted sorts, goal-directed from the safety invariants
   (``model/houdini.py``): the conjuncts the proof needs, inductive for every size;
4. cross-check: ``model/induction.py``'s prover, the same one that checks hand-written
   strengthening, proves the safety invariants with the inferred conjuncts as the
   protocol's strengthening. A proof comes from that prover, never from inference alone.

When a safety invariant is dropped, the same prover, given the conjuncts needed so far,
reports a minimised counterexample to induction; ``check --complete`` says whether a real
counterexample exists at a given size.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import z3

from kvproof.model.candidates import DEFAULT_TEMPLATES, Clause, Templates, candidates
from kvproof.model.dsl import Invariant, Protocol
from kvproof.model.houdini import Checker, Conjunct, houdini, shrink
from kvproof.model.induction import ProofResult, Prover, _FnView
from kvproof.model.step import FiniteStep, symbolic_steps
from kvproof.spec.errors import KvproofInputError


@dataclass(frozen=True)
class InferResult:
    protocol: str
    proved: bool
    inferred: tuple[Clause, ...]  # the conjuncts the proof uses (or needed so far)
    candidates: int
    sample_states: int
    queries: int
    dropped: int
    seconds: float
    reason: str = ""
    proof: ProofResult | None = None  # the cross-check (or the CTI) by induction.prove
    timeline: dict[str, float] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        if self.proved:
            return (
                f"proved for all numbers of requests and pages with {len(self.inferred)} "
                f"inferred conjuncts ({self.candidates} candidates, {self.seconds:.1f} s)"
            )
        return f"inference did not prove it: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {
            "proved": self.proved,
            "summary": self.summary,
            "candidates": self.candidates,
            "sample_states": self.sample_states,
            "queries": self.queries,
            "dropped": self.dropped,
            "seconds": round(self.seconds, 3),
            "reason": self.reason,
            "timeline": {k: round(v, 3) for k, v in self.timeline.items()},
        }


def sample_states(protocol: Protocol, sizes: dict[str, int]) -> list[Any]:
    """Every reachable state of ``sizes`` (``State.data``), one per page-symmetry orbit."""
    from kvproof.model.explore import explore

    sym = tuple(s for s in ("Page",) if s in protocol.symmetric and s in sizes)
    result = explore(protocol, sizes, symmetry=sym, graph=True)
    assert result.graph is not None
    return [result.graph.nodes[n]["state"].data for n in result.graph.nodes]


def infer(
    protocol: Protocol,
    *,
    templates: Templates = DEFAULT_TEMPLATES,
    sample: dict[str, int] | None = None,
    budget_s: float = 120.0,
    timeout_ms: int = 60_000,
) -> InferResult:
    """Infer an inductive invariant that proves ``protocol``'s safety invariants."""
    from kvproof.model.concrete import Concrete
    from kvproof.model.induction import prove
    from kvproof.model.instance import Instance

    if not protocol.vars:
        raise KvproofInputError(f"protocol {protocol.name!r} declares no Vars: nothing to infer")
    start = time.perf_counter()
    timeline: dict[str, float] = {}
    base = dataclasses.replace(protocol, strengthening=())
    sizes = sample or {s: templates.per_sort for s in protocol.sorts}
    datas = sample_states(base, sizes)
    timeline["sample"] = time.perf_counter() - start
    clauses = candidates(base, Concrete(Instance(base, sizes)), datas, templates)
    timeline["candidates"] = time.perf_counter() - start
    conjuncts = [Conjunct(i.name, i) for i in base.safety] + [
        Conjunct(f"inferred_{n}", c.invariant(f"inferred_{n}"), c) for n, c in enumerate(clauses)
    ]
    checker = Checker(base)
    # First on one finite instance (propositional queries, milliseconds): most
    # counterexamples to induction already exist there, and each one found is one for
    # every size. Then over uninterpreted sorts, from the conjuncts needed so far.
    finite = {s: templates.per_sort + 1 for s in protocol.sorts}
    concrete, _ = checker.get(finite)
    inits = list(concrete.initial_states())
    h = houdini(
        [FiniteStep(base, finite)],
        conjuncts,
        checker,
        initially=lambda c: all(checker.holds(c, finite, s) for s in inits),
        deadline=start + budget_s,
    )
    timeline["houdini_finite"] = time.perf_counter() - start
    prover = Prover(base, timeout_ms)
    if h.proved:
        first = shrink(FiniteStep(base, finite), h.needed)
        timeline["shrink"] = time.perf_counter() - start
        h = houdini(
            symbolic_steps(prover),
            h.live,
            checker,
            initially=initially_unbounded(prover),
            deadline=start + budget_s,
            needed_first=[c.name for c in first],
        )
    timeline["houdini"] = time.perf_counter() - start
    found = tuple(c.clause for c in h.needed if c.clause is not None)
    strengthened = with_strengthening(base, found)
    # The proof (or the minimised CTI) is the prover's: the same check hand-written
    # strengthening gets.
    proof = prove(strengthened, timeout_ms=timeout_ms)
    timeline["proof"] = time.perf_counter() - start
    reason = h.reason if not h.proved else ("" if proof.proved else proof.summary)
    return InferResult(
        protocol.name,
        h.proved and proof.proved,
        found,
        len(clauses),
        len(datas),
        h.queries,
        h.dropped,
        time.perf_counter() - start,
        reason,
        proof,
        timeline,
    )


def with_strengthening(protocol: Protocol, clauses: tuple[Clause, ...]) -> Protocol:
    invs = tuple(c.invariant(f"inferred_{n}") for n, c in enumerate(clauses))
    return dataclasses.replace(protocol, strengthening=invs)


def initially_unbounded(prover: Prover) -> Any:
    """Does a conjunct hold in every initial state of every size? (Z3, folded first.)"""
    protocol = prover.protocol
    defaults = {v.name: v.default for v in protocol.vars if not v.rigid}
    view = _FnView(prover.fns, defaults)
    init = prover.logic.lift(protocol.init(prover.ctx(view)))

    def check(c: Conjunct) -> bool:
        body = c.inv.body(prover.ctx(view))
        if body is True:
            return True
        solver = z3.Solver()
        solver.add(init, z3.Not(prover.logic.lift(body)))
        return solver.check() == z3.unsat

    return check


# -- saving and loading an inferred strengthening ---------------------------------------------


def save(path: Path, protocol: Protocol, clauses: tuple[Clause, ...]) -> None:
    data = {
        "kvproof_strengthening": 1,
        "protocol": protocol.name,
        "conjuncts": [{"text": c.text, **c.to_json()} for c in clauses],
    }
    path.write_text(json.dumps(data, indent=2) + "\n")


def load(path: Path, protocol: Protocol) -> tuple[Invariant, ...]:
    """A saved strengthening, checked against the protocol's vocabulary."""
    try:
        data = json.loads(path.read_text())
        rows = data["conjuncts"]
        clauses = tuple(Clause.from_json(r) for r in rows)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise KvproofInputError(f"not a kvproof strengthening file: {exc}", str(path)) from None
    names = {v.name: v for v in protocol.vars}
    for c in clauses:
        for lit in c.cube:
            v = names.get(lit.atom.var)
            if v is None or len(v.args) != len(lit.atom.args):
                raise KvproofInputError(
                    f"{lit.atom.var!r} is not a state variable of {protocol.name}", str(path)
                )
    return tuple(c.invariant(f"saved_{n}") for n, c in enumerate(clauses))
