"""The portfolio verdict of a fixed variant: the engine that answers first settles it (issue #30).

A fixed variant's BMC to its full depth is most of ``kvproof check``'s time (sglang-0.5.22-pd:
depths 14 and 15 take about 95 % of a 15-deep run), yet the unbounded proof, which takes a
few seconds, settles the same question for every depth and size at once: an inductive
invariant has no counterexample of any length. So a fixed variant is checked in this order:

1. a **shallow BMC** (``SHALLOW_DEPTH`` steps) for a quick, shortest counterexample;
2. the **proof** (k-induction on the variant's strengthening, ``model/search/induction.py``);
3. the **deepening BMC** to the variant's depth only when neither settled it (a shallow
   counterexample, or a failed proof), exactly as before the portfolio, so every
   counterexample is still the shortest at its depth.

``--depth``, ``--no-prove`` and buggy variants keep the full-depth BMC (a buggy variant's
traces are documented and pinned); ``--complete`` and ``complete = true`` still run their
search after (``completing.py``). The necessity answers are unchanged: each assumption's
check runs to the variant's full depth, whatever depth settled the verdict.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kvproof.checker.verify.checking import VariantCheck, check_variant

# Depth 8 costs about 1.4 s for sglang-0.5.22-pd at 3x6 (depth 15: about 70 s on a loaded
# 2-core box); every catalog counterexample a fixed variant's assumptions hide is found by
# the necessity check, which runs to the full depth.
SHALLOW_DEPTH = 8


def settles(job: Any, protocol_strengthened: bool) -> bool:
    """Whether ``job`` (a ``CheckJob``) goes through the portfolio."""
    return (
        not job.depth_given
        and not job.variant.buggy
        and job.prove != "never"
        and protocol_strengthened
        and job.depth > SHALLOW_DEPTH
    )


def portfolio_check(job: Any, factory: Any = None) -> VariantCheck:
    """Shallow BMC, then the proof; the full-depth BMC only if neither settled it."""
    from kvproof.model.search.induction import prove

    def bmc_to(depth: int) -> VariantCheck:
        return check_variant(
            job.variant,
            requests=job.requests,
            pages=job.pages,
            depth=depth,
            factory=factory,
            invariants=list(job.invariants) if job.invariants else None,
            without=job.without,
        )

    shallow = bmc_to(SHALLOW_DEPTH)
    if shallow.bmc.holds:
        proof = prove(shallow.protocol)
        if proof.proved:
            return dataclasses.replace(shallow, proof=proof, settled_by="proof")
    else:
        proof = None
    deep = bmc_to(job.depth)
    if proof is None:
        proof = prove(deep.protocol)
    return dataclasses.replace(deep, proof=proof, settled_by="bmc")
