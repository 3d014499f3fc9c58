"""One conform walk: the model chooses each step, the engine's code takes it, and the two
projections are compared after every step.

An engine's queues cannot list their enabled events, so the model does: each step is one
of the model's enabled instances, picked by a ``Chooser`` (``coverage.Guide`` for new
walks, ``Script`` to replay a recorded one under another model in ``diagnose.py``).
``commit`` is never picked: the code decides when it takes a transfer. What the code
decides in the same pass as a step, the model is asked to match with its own enabled
action, on the code's evidence only (``engine.Decided``).

A model with no ``timeout`` of its own (release on ACK only) meets the code's deadlines
through stalls: time passes past a hold's deadline and the model does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kvproof.checker.conform import model_side
from kvproof.checker.conform.engine import Beat, Harness, Step, UpstreamRaised
from kvproof.checker.conform.projection import Mismatch, Projection, compare
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance

# A move of the walk: a model step, a stall to a time or a heartbeat (no model step).
Move = ActionInstance | float | Beat
Transition = tuple[str, tuple[str, str, str]]  # (action, the acting request's phase)


class Chooser(Protocol):
    def choose(
        self, concrete: Concrete, state: State, steps: list[tuple[ActionInstance, Any]],
        stalls: list[float | Beat],
    ) -> Move | None: ...  # fmt: skip

    def taken(self, transition: Transition) -> None:
        """The walk took ``transition`` (the chooser's pick, or what the code decided)."""
        ...


@dataclass
class WalkResult:
    init: State
    moves: list[Move] = field(default_factory=list)  # what the chooser picked
    steps: list[ActionInstance] = field(default_factory=list)  # every model step
    mismatches: list[Mismatch] = field(default_factory=list)
    step_index: int | None = None  # model steps taken when the code disagreed
    stalls: list[int] = field(default_factory=list)  # after which model steps time stalled
    beats: list[int] = field(default_factory=list)  # ... time passed with heartbeats delivered
    covered: set[Transition] = field(default_factory=set)
    raised: UpstreamRaised | None = None
    refused: bool = False  # a scripted move the model could not take (diagnose.py)
    code: Projection | None = None  # the code's projection after the last move

    @property
    def diverged(self) -> bool:
        return bool(self.mismatches) or self.raised is not None

    @property
    def trivial(self) -> bool:
        """Nothing happened but arrivals (every prompt rejected at once, say)."""
        return all(s.action == "arrive" for s in self.steps)


def walk(
    concrete: Concrete,
    init: State,
    harness: Harness,
    chooser: Chooser,
    *,
    allowed: Callable[[str], bool],
    max_steps: int,
) -> WalkResult:
    res = WalkResult(init=init)
    state = init
    committed: set[int] = set()
    intake: dict[int, str] = {}
    sent: dict[int, str] = {}
    freed_in_flight: set[int] = set()  # model: expire took r's source under a transfer
    failed: set[int] = set()  # a failed transfer: its later free is not judged (pair.py)
    actions = {a.name for a in concrete.protocol.actions}
    for _ in range(max_steps):
        succ = [
            (inst, data)
            for inst, data in concrete.successor_data(state.data)
            if inst.action != "commit"
            and allowed(inst.action)
            and _consistent_jump(concrete, State(data), harness, inst)
        ]
        stall: list[float | Beat] = []
        if allowed("timeout"):
            stall += _stall_candidates(concrete, harness)
        stall += [Beat(t) for t in harness.beats()]
        move = chooser.choose(concrete, state, succ, stall)
        if move is None:
            break
        res.moves.append(move)
        try:
            if isinstance(move, float):
                harness.stall(move)
                res.stalls.append(len(res.steps))
            elif isinstance(move, Beat):
                harness.beat(move.when)
                res.beats.append(len(res.steps))
            else:
                # A replayed move another model may not have (diagnose.py) is refused.
                nxt = concrete.step(state, move) if move.action in actions else None
                if nxt is None:
                    res.refused = True
                    return res
                _took(res, chooser, _transition(concrete, state, move))
                reported = model_side.reported_status(concrete, state, move)
                state = nxt
                res.steps.append(move)
                r = move.args[0]
                if move.action == "fail":
                    failed.add(r)
                if r not in failed and model_side.frees_under_transfer(concrete, state, move):
                    freed_in_flight.add(r)
                status = str(concrete.value(state, "poll", (r,)))
                harness.apply(Step(move, status, reported))
                if move.action == "arrive":
                    made = model_side.intake_of(concrete, state, r)
                    if made is not None:
                        intake[r] = made
                    pages = model_side.pages_sent_of_reserved(concrete, state, r)
                    if pages is not None:
                        sent[r] = pages
            state = _close(
                concrete, state, harness, res, committed, chooser, freed_in_flight, failed
            )
            model = model_side.project(concrete, state, committed, intake, sent, freed_in_flight)
            code = res.code = harness.project()
            mismatches = compare(model, code)
        except UpstreamRaised as exc:
            what = (
                f"{move}" if not isinstance(move, ActionInstance) else f"{move.action}{move.args}"
            )
            exc.during = exc.during or f"step {len(res.steps)} ({what})"
            res.raised, res.step_index = exc, len(res.steps)
            return res
        if mismatches:
            res.mismatches, res.step_index, res.code = mismatches, len(res.steps), code
            return res
    return res


def _took(res: WalkResult, chooser: Chooser, t: Transition) -> None:
    res.covered.add(t)
    chooser.taken(t)


def _transition(concrete: Concrete, state: State, inst: ActionInstance) -> Transition:
    return (inst.action, model_side.abstract(concrete, state, inst.args[0]))


def _stall_candidates(concrete: Concrete, h: Harness) -> list[float]:
    """Deadlines of the code's holds, when the model has no ``timeout`` of its own."""
    if any(a.name == "timeout" for a in concrete.protocol.actions):
        return []
    return h.stall_deadlines()


def _consistent_jump(concrete: Concrete, after: State, h: Harness, inst: ActionInstance) -> bool:
    """A clock jump is one of the model's walks only if the model can also take what it
    expires for the other requests."""
    target = h.jump_target(inst)
    if target is None:
        return True
    state: State | None = after
    names = {a.name for a in concrete.protocol.actions}
    for other in h.expiring(target, inst.args[0]):
        known = state is not None and other.action in names
        state = concrete.step(state, other) if known else None  # type: ignore[arg-type]
    return state is not None


def _close(
    concrete: Concrete,
    state: State,
    h: Harness,
    res: WalkResult,
    committed: set[int],
    chooser: Chooser,
    freed_in_flight: set[int],
    failed: set[int],
) -> State:
    """The model's own actions for what the code decided in the same pass."""
    for r in range(concrete.inst.sizes["Req"]):
        seen = h.decided(r)
        dphase = concrete.value(state, "dphase", (r,))
        poll = concrete.value(state, "poll", (r,))
        wanted: list[str] = []
        if seen.committed and r not in committed and dphase == "transfer":
            wanted.append("commit")
        if seen.aborted and dphase == "transfer" and poll == "failed":
            wanted.append("abort")
        if seen.waited_out and dphase == "transfer":
            wanted.append("give_up")
        if seen.release_due and dphase == "draining":
            wanted.append("timeout")
        if seen.source_expired and concrete.value(state, "src_ok", (r,)):
            wanted.append("expire")
        # Freed after an abort the code took in this same pass: ack after that abort.
        if seen.freed and (dphase == "draining" or "abort" in wanted):
            wanted.append("ack")
        for action in wanted:
            inst = ActionInstance(action, (r,))
            known = any(a.name == action for a in concrete.protocol.actions)
            nxt = concrete.step(state, inst) if known else None
            if nxt is None:
                continue  # the model cannot follow: the comparison will say so
            _took(res, chooser, _transition(concrete, state, inst))
            state = nxt
            res.steps.append(inst)
            if action == "commit":
                committed.add(r)
            if r not in failed and model_side.frees_under_transfer(concrete, state, inst):
                freed_in_flight.add(r)
    return state


class Script:
    """Replays recorded moves (``diagnose.py``): the same walk under another model."""

    def __init__(self, moves: list[Move]) -> None:
        self.moves = list(moves)
        self.at = 0

    def choose(
        self, concrete: Concrete, state: State, steps: list[tuple[ActionInstance, Any]],
        stalls: list[float | Beat],
    ) -> Move | None:  # fmt: skip
        if self.at >= len(self.moves):
            return None
        self.at += 1
        return self.moves[self.at - 1]

    def taken(self, transition: Transition) -> None:
        return None
