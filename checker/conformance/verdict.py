"""What a replay found, as plain data: divergence, broken invariants, and what clients got.

Three different claims, never mixed up:

- **leak**: a client's response text carries another tenant's canary. Only the engine's
  output decides it (``oracle.answers``), never the recorder's ground truth or the model.
- **wrong answer**: a 200 whose tokens differ from the single-node engine's for the same
  prompt, without a foreign canary in it (e.g. the request's own KV at the wrong position).
- **engine state**: an invariant of the model is broken on the abstraction of the engine's
  state (a stray write, a 200 for a rejected prompt), while no client's answer shows it.

The model's verdict (``model_violations``) is the trace's own; the drain after the trace
(``replay.drain_to_answers``) only lets the clients get their answers.

What each client got is plain data for reports (``kvproof report``): one row per model
request, whatever its status (a 400 or an abort is as telling as a 200), with the canaries
its text contains, next to the single-node answer: what the same prompt gives with no
disaggregation and no handoff (``refimpl/oracle.py``), what the client should have got.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kvproof.checker.conformance.abstraction import Mismatch
from kvproof.model.lang.trace import Trace
from kvproof.refimpl.oracle import Answer

# What a replay shows, from strongest to weakest.
LEAK = "leak"
WRONG_ANSWER = "wrong_answer"
ENGINE_STATE = "engine_state"
NOTHING = "nothing"


def canary_leaks(responses: Sequence[Answer]) -> list[Answer]:
    """Responses whose text carries another tenant's canary."""
    return [r for r in responses if r.foreign_canaries]


def wrong_answers(responses: Sequence[Answer]) -> list[Answer]:
    """200s whose tokens differ from the single node's."""
    return [r for r in responses if r.status == 200 and not r.tokens_match]


def shown(responses: Sequence[Answer], engine_state: bool) -> str:
    """What clients saw, the strongest of: leak, wrong_answer, engine_state (an invariant
    broken on the engine's state), nothing."""
    if canary_leaks(responses):
        return LEAK
    if wrong_answers(responses):
        return WRONG_ANSWER
    return ENGINE_STATE if engine_state else NOTHING


@dataclass(frozen=True)
class Divergence:
    step: int  # 1-based; 0 = the initial state
    action: str
    reason: str
    mismatches: tuple[Mismatch, ...] = ()
    rows: tuple[tuple[str, str, str, bool], ...] = ()  # side by side: cell, model, engine


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


def loop_step(lasso_start: int, loop_len: int, step_no: int) -> int:
    """The trace's step number of the engine's ``step_no``-th step (rounds go on counting)."""
    if step_no <= lasso_start:
        return step_no
    return lasso_start + 1 + (step_no - lasso_start - 1) % loop_len


@dataclass
class ReplayReport:
    variant: str
    trace: Trace
    steps_applied: int = 0
    not_enabled: str | None = None  # the first step the model does not enable
    divergence: Divergence | None = None
    model_violations: list[tuple[int, str]] = field(default_factory=list)
    engine_violations: list[tuple[int, str]] = field(default_factory=list)
    offset: int = 0  # engine request id of model request 0
    why_not: str = ""  # the model's view of the request whose step is not enabled
    responses: list[Answer] = field(default_factory=list)  # every model request's answer
    crash: str | None = None  # the engine raised: what, and at which step
    drained: tuple[str, ...] = ()  # the steps the drain took after the trace
    # A lasso's loop on the engine (``replay.py``); None for a finite trace.
    lasso: LassoRun | None = None

    @property
    def findings(self) -> list[Answer]:
        """The model's requests' 200s."""
        return [r for r in self.responses if r.status == 200]

    @property
    def failing_answers(self) -> list[Answer]:
        """The oracle's failing 200s: a foreign canary or tokens unlike single node's."""
        return [f for f in self.findings if f.wrong]

    @property
    def canary_leaks(self) -> list[Answer]:
        """Responses whose text carries another tenant's canary."""
        return canary_leaks(self.responses)

    @property
    def leak(self) -> bool:
        """A client's response carried another tenant's canary. An invariant broken on the
        engine's state (isolation included) fails the replay under its own name, not as
        a leak: a stale page whose bytes nobody echoes is no leak a client saw."""
        return bool(self.canary_leaks)

    @property
    def wrong_answers(self) -> list[Answer]:
        return wrong_answers(self.responses)

    @property
    def shows(self) -> str:
        return shown(self.responses, bool(self.engine_violations))

    @property
    def failed(self) -> bool:
        return (
            self.divergence is not None
            or bool(self.failing_answers or self.engine_violations or self.canary_leaks)
            or self.crash is not None
            # the liveness counterexample shows on the engine, as a safety one does
            or (self.lasso is not None and self.lasso.repeats)
        )

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0
