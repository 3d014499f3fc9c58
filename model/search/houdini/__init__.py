"""Houdini, in one home: from candidate conjuncts to an inductive subset, three strategies.

Houdini (Flanagan and Leino, FME 2001) keeps the largest inductive subset of a set of
candidates by dropping every candidate some step breaks from a state satisfying all of
them. kvproof asks it three questions, each answered by the strategy that is fast for it:

- **classic** (``classic.py``, ``inductive_subset``): which safety invariants a subset of the
  protocol's own strengthening proves, by repeated runs of the prover, each dropping the
  conjunct its counterexample to induction broke. A buggy variant's BMC stops early on the
  invariants it proves (``checker/verify/driver.py``).
- **goal-directed** (``goal.py``, ``houdini``): an inductive subset of hundreds of template
  candidates that proves safety, asking the solver with only the conjuncts the proof needs
  so far; over uninterpreted sorts (a proof for every size: ``infer.py``) or one finite
  instance (``complete.py``).
- **unsat-core** (``core.py``, ``small_inductive``): a *small* inductive subset at one finite
  size, grown from safety by the unsat cores of propositional queries and shrunk by concrete
  walks (``infer.py``'s first step; the proof for every size stays ``induction.py``'s).

Every strategy re-runs each solver counterexample in the concrete interpreter: one that does
not replay is a ``ProofError``, never a result. ``conjunct.py`` holds what they share.
"""

from kvproof.model.search.houdini.classic import Subset, inductive_subset
from kvproof.model.search.houdini.conjunct import Checker, Conjunct, Step
from kvproof.model.search.houdini.core import Closure, small_inductive
from kvproof.model.search.houdini.goal import HoudiniResult, houdini

__all__ = [
    "Checker",
    "Closure",
    "Conjunct",
    "HoudiniResult",
    "Step",
    "Subset",
    "houdini",
    "inductive_subset",
    "small_inductive",
]
