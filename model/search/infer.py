"""Invariant inference: ``kvproof prove`` for a protocol that brings no strengthening.

1. sample: every reachable state of a small instance (``explore``, two elements per sort);
2. candidates: template clauses no sampled state breaks (``model/search/candidates.py``);
3. on one finite instance (three elements per sort, propositional queries): a small
   inductive subset that contains the safety invariants (``houdini.py``'s unsat-core
   Houdini: every live candidate assumed, concrete walks from each counterexample, unsat
   cores shrunk by deletion);
4. the proof: ``model/search/induction.py``'s prover, the same one that checks hand-written
   strengthening, proves the safety invariants with the kept conjuncts as the protocol's
   strengthening, over uninterpreted sorts (every size). A proof comes from that prover,
   never from inference alone.
5. only if the prover finds a counterexample at a larger size: Houdini over uninterpreted
   sorts (``houdini.py``'s goal-directed ``houdini``), from what step 3 kept, then the
   prover again.

When a safety invariant is dropped, the prover reports a counterexample to induction of
the safety invariants alone; ``check --complete`` says whether a real counterexample
exists at a given size.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import z3

from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Invariant, Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.search.candidates import (
    DEFAULT_TEMPLATES,
    Clause,
    Templates,
    candidates,
    no_vars,
)
from kvproof.model.search.houdini import houdini, small_inductive
from kvproof.model.search.induction import ProofResult, Prover, for_people, prove
from kvproof.model.search.step import Cex, Checker, Conjunct, FiniteStep, symbolic_steps
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
    # When a safety invariant is dropped: the step that broke it, from a state that satisfies
    # every surviving candidate (so likely a reachable one, unlike the prover's CTI of the
    # safety invariants alone), as plain text data (``describe_cex``).
    cti: dict[str, Any] | None = None

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
            "cti": self.cti,
        }


def sample_states(
    protocol: Protocol, sizes: dict[str, int], budget_s: float | None = None
) -> list[Any]:
    """Every reachable state of ``sizes`` (``State.data``), one per symmetry orbit.

    Bad input when the search outlasts ``budget_s``: the templates' variables per sort
    set the sample's size, so the user has one thing to change."""
    from kvproof.model.search.explore import explore

    sym = tuple(s for s in protocol.explore_symmetry if s in protocol.symmetric and s in sizes)
    result = explore(protocol, sizes, symmetry=sym, graph=True, max_seconds=budget_s)
    if result.truncated:
        where = " / ".join(f"{n} {s}" for s, n in sizes.items())
        raise KvproofInputError(
            f"sampling the reachable states of {where} took over {budget_s:g} s (half the "
            f"--budget; {result.states} states so far): lower --infer-vars or raise --budget"
        )
    assert result.graph is not None
    return [result.graph.nodes[n]["state"].data for n in result.graph.nodes]


def infer(
    protocol: Protocol,
    *,
    templates: Templates = DEFAULT_TEMPLATES,
    budget_s: float = 120.0,
    timeout_ms: int = 60_000,
) -> InferResult:
    """Infer an inductive invariant that proves ``protocol``'s safety invariants."""
    if not protocol.vars:
        raise KvproofInputError(no_vars(protocol))
    start = time.perf_counter()
    timeline: dict[str, float] = {}
    base = dataclasses.replace(protocol, strengthening=())
    sizes = {s: templates.per_sort for s in protocol.sorts}
    datas = sample_states(base, sizes, budget_s=budget_s / 2)
    timeline["sample"] = time.perf_counter() - start
    clauses = candidates(base, Concrete(Instance(base, sizes)), datas, templates)
    timeline["candidates"] = time.perf_counter() - start
    conjuncts = [Conjunct(i.name, i) for i in base.safety] + [
        Conjunct(f"inferred_{n}", c.invariant(f"inferred_{n}"), c) for n, c in enumerate(clauses)
    ]
    checker = Checker(base)
    deadline = start + budget_s
    # Step 3: on one finite instance (propositional queries, milliseconds each), a small
    # inductive subset of the candidates that contains safety.
    finite = {s: templates.per_sort + 1 for s in protocol.sorts}
    step = FiniteStep(base, finite)
    timeline["finite_step"] = time.perf_counter() - start
    closure = small_inductive(step, conjuncts, deadline=deadline)
    timeline["houdini_finite"] = time.perf_counter() - start
    queries, dropped = closure.queries, closure.dropped
    needed = closure.kept
    found = tuple(c.clause for c in needed if c.clause is not None)
    # Step 4: the proof for every size is the prover's: the same check hand-written
    # strengthening gets.
    proof = prove(with_strengthening(base, found), timeout_ms=timeout_ms)
    timeline["proof"] = time.perf_counter() - start
    reason = closure.reason
    if closure.closed and not proof.proved:
        # Step 5: inductive at this size, not at every size: Houdini over uninterpreted sorts
        # from the survivors, starting with what the finite proof used, then the prover.
        prover = Prover(base, timeout_ms)
        h = houdini(
            symbolic_steps(prover),
            closure.live,
            checker,
            initially=initially_unbounded(prover),
            deadline=deadline,
            needed_first=[c.name for c in needed],
        )
        queries, dropped = queries + h.queries, dropped + h.dropped
        timeline["houdini_symbolic"] = time.perf_counter() - start
        reason = h.reason
        if h.closed:
            found = tuple(c.clause for c in h.kept if c.clause is not None)
            proof = prove(with_strengthening(base, found), timeout_ms=timeout_ms)
            timeline["proof_again"] = time.perf_counter() - start
    proved = proof.proved  # the prover's word, even on a set cut short by the budget
    if proved:
        reason = ""
    elif not reason:
        reason = proof.summary
    return InferResult(
        protocol.name,
        proved,
        found,
        len(clauses),
        len(datas),
        queries,
        dropped,
        time.perf_counter() - start,
        reason,
        proof,
        timeline,
        describe_cex(checker, closure.cti, closure.cti_conjunct) if closure.cti else None,
    )


def describe_cex(checker: Checker, cex: Cex, conjunct: str | None) -> dict[str, Any]:
    """A finite counterexample to induction for people: non-default pre-state cells, the
    action, what it changed (re-run by the concrete interpreter)."""
    cells, changes = for_people(checker.get(cex.sizes).concrete, cex.pre, checker.post(cex))
    return {
        "conjunct": conjunct,
        "sizes": dict(cex.sizes),
        "pre": cells,
        "action": str(cex.action),
        "changes": changes,
    }


def with_strengthening(protocol: Protocol, clauses: tuple[Clause, ...]) -> Protocol:
    invs = tuple(c.invariant(f"inferred_{n}") for n, c in enumerate(clauses))
    return dataclasses.replace(protocol, strengthening=invs)


def initially_unbounded(prover: Prover) -> Any:
    """Does a conjunct hold in every initial state of every size? (Z3, folded first.)"""
    view = prover.init_view()
    init = prover.logic.lift(prover.protocol.init(prover.ctx(view)))

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
        clauses = tuple(map(Clause.from_json, json.loads(path.read_text())["conjuncts"]))
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
