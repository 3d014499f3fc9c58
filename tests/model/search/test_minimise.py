"""The finite-instance half of inference: every-candidate evaluation and the small closure.

``model/search/step.py``'s ``ClauseTable`` must agree with the one-clause ``Evaluator``;
``small_inductive`` must return a set that contains safety and is inductive on its instance
(re-asked here on a fresh solver), drop only candidates some state of the invariant breaks,
and report a safety invariant the candidates cannot prove with a counterexample that
replays.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import z3

from kvproof.checker.verify.protocols import load_protocol, resolve_variants
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.search.candidates import Evaluator, candidates
from kvproof.model.search.houdini import small_inductive
from kvproof.model.search.infer import sample_states
from kvproof.model.search.step import ClauseTable, Conjunct, FiniteStep

SPEC = str(Path(__file__).resolve().parents[3] / "examples/deep_bug/pipeline.py") + ":Pipeline"
SAMPLE = {"Req": 2, "Page": 2}
FINITE = {"Req": 3, "Page": 3}


def pipeline(name: str) -> Protocol:
    user = load_protocol(SPEC)
    (variant,) = resolve_variants([name], False, None, user)
    return user.factory(variant.switches)


def conjuncts(protocol: Protocol) -> list[Conjunct]:
    clauses = candidates(
        protocol, Concrete(Instance(protocol, SAMPLE)), sample_states(protocol, SAMPLE)
    )
    return [Conjunct(i.name, i) for i in protocol.safety] + [
        Conjunct(f"c{n}", c.invariant(f"c{n}"), c) for n, c in enumerate(clauses)
    ]


def test_clause_table_agrees_with_the_evaluator() -> None:
    protocol = pipeline("release-early")  # the buggy one: its states break more clauses
    clauses = [c.clause for c in conjuncts(protocol) if c.clause is not None]
    concrete = Concrete(Instance(protocol, FINITE))
    table, ev = ClauseTable(concrete, clauses), Evaluator(concrete)
    # states of the 3 x 3 instance: reachable ones, and their successors' successors
    frontier = [s.data for s in concrete.initial_states()]
    seen: list = []
    for _ in range(4):
        frontier = [n for d in frontier[:50] for _, n in concrete.successor_data(d)]
        seen += frontier
    assert len(seen) > 100
    for data in seen[:400]:
        expect = np.array([not ev.holds(c, data) for c in clauses])
        assert (table.broken(data) == expect).all()
    assert any(table.broken(d).any() for d in seen)  # some state breaks some clause


def test_small_inductive_is_inductive_and_contains_safety() -> None:
    protocol = pipeline("release-waits")
    all_ = conjuncts(protocol)
    result = small_inductive(FiniteStep(protocol, FINITE), all_, deadline=time.perf_counter() + 60)
    assert result.closed, result.reason
    names = [c.name for c in result.kept]
    assert [c.name for c in all_ if c.safety] == names[: len(protocol.safety)]
    assert len(result.kept) < len(result.live) <= len(all_)
    # Re-asked on a fresh solver: no step leaves the kept set from a state inside it.
    step = FiniteStep(protocol, FINITE)
    for c in result.kept:
        step.solver.push()
        step.solver.add(*(step.formula(k, post=False) for k in result.kept))
        step.solver.add(z3.Not(step.formula(c, post=True)))
        assert step.solver.check() == z3.unsat, c.name
        step.solver.pop()
    # Every kept conjunct holds initially.
    concrete = step.concrete
    for s in concrete.initial_states():
        assert all(concrete.check(c.inv, s) for c in result.kept)


def test_small_inductive_reports_the_bug_with_a_replaying_cti() -> None:
    protocol = pipeline("release-early")
    result = small_inductive(
        FiniteStep(protocol, FINITE), conjuncts(protocol), deadline=time.perf_counter() + 60
    )
    assert not result.closed
    assert result.reason == "safety no_stray_write dropped"
    assert result.cti is not None and result.cti_conjunct == "no_stray_write"
    concrete = Concrete(Instance(protocol, result.cti.sizes))
    post = concrete.step(result.cti.pre, result.cti.action)
    assert post is not None and "no_stray_write" in concrete.violated(post)
