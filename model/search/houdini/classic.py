"""Which safety invariants hold at every depth, when not all do: Houdini by repeated proof.

A buggy variant breaks some invariants, so its strengthening is no longer inductive as a
whole (in mooncake-batch-failed-partial, ``inflight_held``, ``landed_is_fresh`` and
``sender_while_held`` fail once a batch's partial failure frees pages early). Classic Houdini
(Flanagan and Leino, FME 2001) keeps the largest inductive subset: whenever the prover's
counterexample to induction breaks a conjunct from a state satisfying all the others, no
inductive subset of the current set contains that conjunct, so it is dropped and the prover
runs again. What survives is a real proof (``induction.prove``'s answer), and every safety
invariant in it holds for every depth and size. ``checker/verify/driver.py`` uses it to stop a buggy
variant's BMC once every invariant not proved here has its counterexample, and hands BMC the
whole surviving set (``inductive``): every reachable state satisfies it, so asserting it at
each step removes no counterexample and prunes the deep queries (sglang-pd-decode-radix-race's
depth-16 query: minutes without it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kvproof.model.lang.dsl import Protocol
from kvproof.model.search.induction import prove


@dataclass(frozen=True)
class Subset:
    proved: tuple[str, ...]  # safety invariants the surviving set proves (empty: none)
    dropped: tuple[str, ...]  # conjuncts dropped, in order
    proofs: int  # prover runs
    # the proved set's conjuncts (invariants and strengthening, by name; empty: no proof)
    inductive: tuple[str, ...] = ()


def inductive_subset(
    protocol: Protocol, safety: tuple[str, ...] | None = None, *, max_proofs: int = 12
) -> Subset:
    """The safety invariants (of ``safety``, default all) that a subset of ``protocol``'s
    strengthening proves; gives up (proving nothing) after ``max_proofs`` prover runs."""
    invs = [i for i in protocol.safety if safety is None or i.name in safety]
    others = tuple(i for i in protocol.invariants if not i.safety)
    strengthening = list(protocol.strengthening)
    dropped: list[str] = []
    for n in range(1, max_proofs + 1):
        if not invs:
            return Subset((), tuple(dropped), n - 1)
        trial = dataclasses.replace(
            protocol, invariants=(*invs, *others), strengthening=tuple(strengthening)
        )
        result = prove(trial)
        if result.proved:
            kept = tuple(i.name for i in (*trial.invariants, *trial.strengthening))
            return Subset(tuple(i.name for i in invs), tuple(dropped), n, kept)
        if result.cti is None:  # the solver answered unknown: nothing is settled
            return Subset((), tuple(dropped), n)
        gone = result.cti.conjunct
        dropped.append(gone)
        invs = [i for i in invs if i.name != gone]
        strengthening = [i for i in strengthening if i.name != gone]
    return Subset((), tuple(dropped), max_proofs)
