"""A lasso on the engine: the stem once, then the loop ``loops`` times (issue #29 item 3).

The model's loop returns to the state after the stem and repeats forever; the engine cannot
run forever, so replay runs the loop ``k`` rounds in lockstep and, after each, asks what a
liveness counterexample claims: that the engine is back where the loop started (its
abstraction equals the model's state at ``loop``), and that what the loop never resolves
(``checker/verify/forever.py``) is still unresolved on the engine's own state: the page is
still off decode's free list and in the request's table, the request still has no answer.
Both read ``Cluster.view()`` and the allocator, the engine's own face, never the model.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvproof.checker.conformance.abstraction import abstract, compare, side_by_side
from kvproof.checker.conformance.verdict import Divergence
from kvproof.checker.verify.forever import WAITING, Forever, forever

if TYPE_CHECKING:  # replay imports this module
    from kvproof.checker.conformance.lockstep import Lockstep
    from kvproof.checker.conformance.verdict import ReplayReport
    from kvproof.model.lang.concrete import State
    from kvproof.model.lang.trace import Trace

DEFAULT_LOOPS = 3


@dataclass(frozen=True)
class LassoRun:
    """How far the engine followed a lasso's loop."""

    loop: int  # the trace's loop index: steps[loop:] repeat
    loops: int  # rounds asked for (``--loops``)
    rounds: int  # rounds the engine went through, back at the loop's start after each
    forever: tuple[str, ...]  # what stayed unresolved on the engine through every round
    resolved: str | None = None  # what the engine resolved although the model never does

    @property
    def repeats(self) -> bool:
        """The engine repeats the loop as the model does: the lasso shows on the engine."""
        return self.rounds == self.loops and self.resolved is None

    def summary(self) -> str:
        if not self.repeats:
            return f"the loop ran {self.rounds} of {self.loops} rounds on the engine"
        what = " / ".join(self.forever) if self.forever else "it is back where it started"
        return f"the loop repeats on the engine ({self.rounds} rounds): {what}"

    def to_json(self) -> dict[str, object]:
        return {
            "loop": self.loop,
            "loops": self.loops,
            "rounds": self.rounds,
            "repeats": self.repeats,
            "forever": list(self.forever),
            "resolved": self.resolved,
        }


def unresolved_on_engine(ls: Lockstep, f: Forever) -> bool:
    """``f`` still holds on the engine: read from its view and allocator, not the model."""
    view = ls.cluster.view()
    rid = f.r + ls.rids.offset
    req = view.requests[rid]
    if f.kind == "held":
        page = f.p if f.p is not None else -1
        return view.pages[page].owner == rid and not ls.cluster.is_free("decode", page)
    if f.kind == "unscheduled":
        return req.dphase in WAITING
    return req.dphase != "idle" and req.resp == "none"


def back_at_start(ls: Lockstep, start: State, round_no: int) -> Divergence | None:
    """The engine's state after a round equals the model's state at the loop's start."""
    eng = abstract(ls.cluster, ls.concrete, ls.rids.offset)
    mism = compare(ls.concrete, start, eng)
    if not mism:
        return None
    return Divergence(
        ls.step_no,
        f"loop round {round_no}",
        "after the loop the engine is not back in the state the loop started from",
        tuple(mism),
        tuple(side_by_side(ls.concrete, start, eng, mism)),
    )


def loop_step(lasso_start: int, loop_len: int, step_no: int) -> int:
    """The trace's step number of the engine's ``step_no``-th step (rounds go on counting)."""
    if step_no <= lasso_start:
        return step_no
    return lasso_start + 1 + (step_no - lasso_start - 1) % loop_len


# Replay's lockstep run of some steps (``replay._run``): False once the replay stopped.
RunSteps = Callable[..., bool]


def run_lasso(ls: Lockstep, trace: Trace, report: ReplayReport, loops: int, run: RunSteps) -> None:
    """The stem once, then ``loops`` rounds of the loop, each checked to come back to the
    loop's start with what the loop never resolves still unresolved on the engine."""
    loop = trace.loop if trace.loop is not None else len(trace.steps)
    found = forever(trace, ls.protocol)
    rounds, resolved = 0, None
    if run(ls, trace.steps[:loop], report):
        # A stutter (an empty loop) needs no more: after every step the lockstep already
        # checked that the engine can take no step the model forbids.
        start = ls.state
        for k in range(1, loops + 1):
            if not run(ls, trace.steps[loop:], report, initial=False):
                break
            report.divergence = back_at_start(ls, start, k)
            if report.divergence is not None:
                break
            gone = [f for f in found if not unresolved_on_engine(ls, f)]
            if gone:
                resolved = f"{gone[0].text()} in the model, but the engine resolved it"
                report.divergence = Divergence(ls.step_no, f"loop round {k}", resolved)
                break
            rounds = k
    report.lasso = LassoRun(loop, loops, rounds, tuple(f.text() for f in found), resolved)
