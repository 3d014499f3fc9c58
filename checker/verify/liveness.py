"""``kvproof check --liveness`` as a library call: fair lassos of a variant, against its
``[expect]`` liveness keys, with the necessity of each fairness assumption in force.

The explicit-state search (``model/search/lasso.py``) gives the verdict: it searches the
whole graph at ``LIVENESS_SIZES``, so "holds" means no fair lasso at any depth at that size.
Each fairness assumption still in force is dropped once: a lasso appearing is the one it
was hiding (needed), none appearing flags it unnecessary, as for the guard assumptions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from kvproof.checker.verify.protocols import ProtocolFactory, protocol_for
from kvproof.model.lang.dsl import Protocol
from kvproof.model.search.lasso import LivenessResult, find_lassos
from kvproof.spec.assumptions import FAIRNESS, of_kind
from kvproof.spec.variant import Variant

# Two requests compete for one decode page: enough for a held page to starve the other
# request, small enough that the complete search takes about a second per variant.
LIVENESS_SIZES = {"Req": 2, "Page": 1}


@dataclass(frozen=True)
class FairnessNeed:
    """Whether a fairness assumption in force is needed: the lasso it hides, if any."""

    name: str
    needed: bool | None  # None: not assessed (no property holds with it either)
    hides: str | None = None  # the property violated without it

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"needed": self.needed}
        if self.hides:
            out["hides"] = self.hides
        return out


@dataclass(frozen=True)
class LivenessCheck:
    variant: Variant
    protocol: Protocol | None  # None in another process (``VariantVerdict.with_protocols``)
    result: LivenessResult
    without: tuple[str, ...] = ()
    necessity: tuple[FairnessNeed, ...] = ()

    def verdict(self, name: str) -> str:
        return "holds" if self.result.result(name).holds else "violated"

    def matches(self, name: str) -> bool:
        expected = self.variant.expect_liveness.get(name)
        return expected is None or expected == self.verdict(name)

    @property
    def all_match(self) -> bool:
        return all(self.matches(r.property) for r in self.result.results)

    @property
    def violated(self) -> bool:
        return not self.result.holds


def check_liveness(
    variant: Variant,
    protocol: Protocol | None = None,
    *,
    names: tuple[str, ...] | None = None,
    without: tuple[str, ...] = (),
    factory: ProtocolFactory | None = None,
    sizes: dict[str, int] | None = None,
    necessity: bool = True,
) -> LivenessCheck:
    """Every liveness property of ``protocol`` (the variant's, built with ``liveness=True``
    by ``protocol_for``; or ``names``) at ``sizes``; ``necessity`` rebuilds it without each
    fairness assumption in force, from ``factory`` (None: kvproof's handoff). Without
    ``protocol`` (a notebook's call) it is built here, once."""
    if protocol is None:
        protocol = protocol_for(variant, factory, without, liveness=True)
    sizes = dict(sizes or LIVENESS_SIZES)
    result = find_lassos(protocol, sizes, variant=variant.name, names=names)
    check = LivenessCheck(variant, protocol, result, tuple(without))
    if not necessity:
        return check
    needs = []
    for name in of_kind(variant.assume, FAIRNESS):
        if name in without:
            continue
        if not any(r.holds for r in result.results):
            needs.append(FairnessNeed(name, None))  # nothing it could be needed for
            continue
        dropped = protocol_for(variant, factory, (*without, name), liveness=True)
        found = find_lassos(dropped, sizes, variant=variant.name, names=names)
        newly = [
            r.property for r in found.results if not r.holds and result.result(r.property).holds
        ]
        needs.append(FairnessNeed(name, bool(newly), newly[0] if newly else None))
    return dataclasses.replace(check, necessity=tuple(needs))
