"""The portfolio's depths and the background proof beside a buggy variant's BMC (issue #30).

Which phases run is ``plan.py``'s; this holds why they run at these depths.

A fixed variant's BMC to its full depth is most of ``kvproof check``'s time (sglang-0.5.22-pd:
depths 14 and 15 take about 95 % of a 15-deep run), yet the unbounded proof, which takes a
few seconds, settles the same question for every depth and size at once: an inductive
invariant has no counterexample of any length. So a fixed variant is checked in this order:

1. a **shallow BMC** (``SHALLOW_DEPTH`` steps) for a quick, shortest counterexample;
2. the **proof** (k-induction on the variant's strengthening, ``model/search/induction.py``);
3. the **deepening BMC** to the variant's depth only when neither settled it (a shallow
   counterexample, or a failed proof), so every counterexample is still the shortest at
   its depth.

``--depth``, ``--no-prove`` and buggy variants keep the full-depth BMC (a buggy variant's
traces are documented and pinned); ``--complete`` and ``complete = true`` still run their
search after (``completing.py``). The necessity answers are unchanged: each assumption's
check runs to the variant's full depth, whatever depth settled the verdict.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kvproof.checker.distrib.fork import Child, fork_call

if TYPE_CHECKING:  # bmc loads Z3: the plan reads this module's depths before any work
    from kvproof.model.search.bmc import Settlement

# Depth 8 costs about 1.4 s for sglang-0.5.22-pd at 3x6 (depth 15: about 70 s on a loaded
# 2-core box); every catalog counterexample a fixed variant's assumptions hide is found by
# the necessity check, which runs to the full depth.
SHALLOW_DEPTH = 8


# A buggy variant's BMC waits for the proof of the invariants it has not broken at one fixed
# depth, whatever the proof's speed, so that its answer (and the inductive invariant asserted
# from then on, which may change Z3's pick among equally short traces) enters every run at
# the same point: ``SUBSET_LEAD`` depths before the last, in a search at least
# ``SUBSET_MIN_DEPTH`` deep. Those last depths cost the most (sglang-pd-decode-radix-race:
# depths 15-17 took 3 of its 3.2 minutes alone without the invariant, 15 s in all with it),
# while a shallower search is over before the proof (Houdini, 1-3 s) would be (measured per
# variant, ``kvproof check V``: the proof cost sglang-0.5.19-pd 1.1 -> 3.3 s at depth 12).
SUBSET_MIN_DEPTH = 15
SUBSET_LEAD = 4


class BackgroundSubset:
    """``bmc``'s ``settled``: the invariants ``inductive_subset`` proves and its inductive
    invariant, computed in a forked child while the BMC goes on in this process (the other
    core), and waited for at depth ``wait`` (or the last, if that comes first). The
    child is a copy: its Z3 work leaves this process's context as it was.

    Whether the child starts depends only on the unresolved names, and the answer is taken
    at a fixed depth, so the stop depth, the counterexamples and the ``--json`` are the same
    however fast the proof comes back. Without ``fork`` nothing starts: the full depth."""

    def __init__(self, protocol: Any, wait: int) -> None:
        self.protocol = protocol
        self.wait = wait
        self.child: Child | None = None
        self.answer: Settlement | None = None

    def __call__(self, k: int, unresolved: frozenset[str], last: bool) -> Settlement | None:
        if self.answer is not None or not unresolved:
            return self.answer
        if self.child is None:
            if not hasattr(os, "fork"):
                return None
            self.child = fork_call(_proved, self.protocol, tuple(sorted(unresolved)))
        if k < self.wait and not last:
            return None  # still early: the BMC goes one depth further meanwhile
        try:
            proved, inductive = self.child.result("the background proof")
        except Exception:  # a failed (or dead) proof settles nothing
            proved, inductive = (), ()
        from kvproof.model.search.bmc import Settlement

        self.answer = Settlement(frozenset(proved), tuple(inductive))
        return self.answer

    def close(self) -> None:
        """Stop a proof nobody will read (the BMC found every counterexample first)."""
        if self.child is not None:
            self.child.kill()


def _proved(protocol: Any, names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The safety invariants proved and the proof's inductive invariant (by name)."""
    from kvproof.model.search.houdini import inductive_subset

    found = inductive_subset(protocol, names)
    return tuple(found.proved), tuple(found.inductive)
