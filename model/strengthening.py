"""Strengthening invariants for the unbounded proofs (filled in with the proof engine)."""

from __future__ import annotations

from kvproof.model.dsl import Invariant
from kvproof.spec.variant import Switches


def strengthening(sw: Switches) -> tuple[Invariant, ...]:
    return ()
