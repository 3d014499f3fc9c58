"""``kvproof check --liveness`` as a library call: fair lassos of a variant, against its
``[expect]`` liveness keys, with the necessity of each fairness assumption in force.

The explicit-state search (``model/search/lasso.py``) gives the verdict: it searches the
whole graph at ``LIVENESS_SIZES``, so "holds" means no fair lasso at any depth at that size.
Each fairness assumption still in force is dropped once: a lasso appearing is the one it
was hiding (needed), none appearing flags it unnecessary, as for the guard assumptions.

A lasso's loop is where a property's goal ("always, trigger -> eventually goal") never
comes: ``forever`` reads the loop's states of kvproof's handoff vocabulary (``resp``,
``dphase``, ``owns``) and names what stays unresolved through *every* state of the loop,
the request never answered, the page never returned (issue #29 items 3 and 6): the printer
says it, replay checks it on the engine, the HTML report marks it "forever". A protocol
without those variables has nothing named (its lassos still print and replay).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kvproof.checker.verify.protocols import ProtocolFactory, protocol_for
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import Trace, replay
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
    necessity: bool = True,
) -> LivenessCheck:
    """Every liveness property of ``protocol`` (the variant's, built with ``liveness=True``
    by ``protocol_for``; or ``names``) at ``LIVENESS_SIZES``; ``necessity`` rebuilds it without each
    fairness assumption in force, from ``factory`` (None: kvproof's handoff). Without
    ``protocol`` (a notebook's call) it is built here, once."""
    if protocol is None:
        protocol = protocol_for(variant, factory, without, liveness=True)
    sizes = dict(LIVENESS_SIZES)
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


# Which unresolved things each of the handoff's properties is about; any other name (a user
# protocol's property, or none) gets every kind found.
ABOUT = {
    "answered": ("unanswered",),
    "no_starvation": ("unscheduled",),
    "pages_return": ("held",),
}
# Decode phases of an admitted request not yet scheduled (``model/handoff/protocol.py``).
WAITING = ("queued", "transfer")


@dataclass(frozen=True)
class Forever:
    """One thing a loop never resolves: ``kind`` is unanswered / unscheduled (a request
    ``r``) or held (page ``p``, owned by request ``r`` through the whole loop)."""

    kind: str
    r: int
    p: int | None = None

    @property
    def target(self) -> str:
        """The name the report marks: ``r1`` or ``p0``."""
        return f"p{self.p}" if self.p is not None else f"r{self.r}"

    def text(self) -> str:
        if self.kind == "held":
            return f"page p{self.p} is never returned (r{self.r} holds it)"
        if self.kind == "unscheduled":
            return f"request r{self.r} is never scheduled"
        return f"request r{self.r} is never answered"


def forever(trace: Trace, protocol: Any, states: Sequence[State] = ()) -> tuple[Forever, ...]:
    """What stays unresolved in every state of ``trace``'s loop, for ``trace.violated``
    (``states``: the trace's, if the caller has them). The loop's states run from the one
    after ``steps[:loop]`` up to the last loop step's pre-state (the state after the last
    step is the first again); an empty loop (a stutter) is its one state, the last."""
    if trace.loop is None:
        raise ValueError("not a lasso: the trace has no loop")
    concrete = Concrete(Instance(protocol, trace.sizes))
    states = list(states) or replay(trace, concrete)
    states = states[-1:] if trace.loop == len(trace.steps) else states[trace.loop : -1]
    names = {v.name for v in protocol.vars}
    kinds = ABOUT.get(trace.violated or "", ("unanswered", "unscheduled", "held"))
    found: list[Forever] = []

    def always(var: str, args: tuple[int, ...], test: Callable[[Any], bool]) -> bool:
        return all(test(concrete.value(st, var, args)) for st in states)

    reqs = range(trace.sizes.get("Req", 0))
    if {"resp", "dphase"} <= names:
        for r in reqs:
            busy = always("dphase", (r,), lambda v: v != "idle")
            if "unanswered" in kinds and busy and always("resp", (r,), lambda v: v == "none"):
                found.append(Forever("unanswered", r))
            if "unscheduled" in kinds and always("dphase", (r,), lambda v: v in WAITING):
                found.append(Forever("unscheduled", r))
    if "owns" in names and "held" in kinds:
        for p in range(trace.sizes.get("Page", 0)):
            held = [r for r in reqs if always("owns", (r, p), lambda v: v is True)]
            found += [Forever("held", r, p) for r in held]
    return tuple(found)


def lasso_explanation(trace: Trace, protocol: Any, states: Sequence[State] = ()) -> str:
    """One sentence for a lasso: what its loop never resolves."""
    n = len(trace.steps) - (trace.loop or 0)
    found = forever(trace, protocol, states)
    what = "; ".join(f.text() for f in found) if found else "nothing it waits for ever comes"
    if n == 0:  # a stutter: no fair step is enabled in the last state
        return f"then no step can be taken, forever: {what}"
    steps = "step repeats" if n == 1 else f"{n} steps repeat"
    return f"the loop's {steps} forever: {what}"
