"""What a lasso's loop leaves unresolved forever: the request never answered, the page never
returned (issue #29 items 3 and 6).

A liveness property says "always, trigger -> eventually goal"; its lasso's loop is where the
goal never comes. This reads the loop's states of kvproof's handoff vocabulary (``resp``,
``dphase``, ``owns``) and names what stays unresolved through *every* state of the loop: the
printer says it, replay checks it on the engine, the HTML report marks it "forever". A
protocol without those variables has nothing named (its lassos still print and replay).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import Trace, replay

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
