"""One conform walk: the model chooses each step, the release's code takes it, and the
projection is compared after every step.

SGLang's queues cannot list their enabled events, so the model does: each step is drawn
(seeded) from the model's enabled instances. ``commit`` is never drawn: the code decides
when a transfer is committed (``pop_transferred`` on Success). What the code decides in the
same scheduler pass as a step, the model is asked to match with its own enabled action, but
only on the code's evidence: ``commit`` when the code committed, ``abort`` when it aborted
a failed transfer, ``timeout``/``give_up`` when the clock passed the deadline the code set.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kvproof.checker.upstream.drive import Harness
from kvproof.checker.upstream.project import Mismatch, compare, intake_mismatch, switch_for
from kvproof.checker.upstream.raised import Raised, trace_text, upstream_raise
from kvproof.checker.upstream.transfer import PageCounts, pages_mismatch, switch_for_pages
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance

# Environment faults, drawn only with ``--faults`` (as for ``fuzz``). A client abort is in
# every conform walk: the decision code under test is the abort path.
ENV_FAULTS = frozenset({"fail", "p_abort", "timeout", "expire", "give_up"})


@dataclass
class WalkResult:
    steps: list[ActionInstance] = field(default_factory=list)
    init: State | None = None
    mismatches: list[Mismatch] = field(default_factory=list)
    switch: str | None = None
    step_index: int | None = None  # the step after which the code disagreed
    stalls: list[int] = field(default_factory=list)  # after which steps time stalled
    raised: Raised | None = None  # the release's code raised during a step (a finding)
    traceback: str = ""  # its full traceback, written beside the trace


def walk(
    concrete: Concrete,
    inits: list[State],
    harness: Harness,
    rng: random.Random,
    *,
    faults: bool,
    max_steps: int,
    over_long: Any = None,
    counts: dict[bool, PageCounts] | None = None,
) -> WalkResult:
    """``over_long``: prefill's intake of an over-long prompt (``intake.Intake``), the same
    for every walk of a release; compared at each arrival of one. ``counts``: the pages
    decode reserves and prefill sends for a prompt that fits (False) and the over-long one
    (True), compared at each arrival."""
    state = rng.choice(inits)
    res = WalkResult(init=state)
    committed: set[int] = set()
    last: dict[int, str] = {}
    failed_first: set[int] = set()
    for _ in range(max_steps):
        succ = [
            (inst, data)
            for inst, data in concrete.successor_data(state.data)
            if inst.action != "commit"
            and (faults or inst.action not in ENV_FAULTS)
            and _consistent_jump(concrete, State(data), harness, inst)
        ]
        stall = _stall_candidates(concrete, harness) if faults else []
        if not succ and not stall:
            break
        pick = rng.randrange(len(succ) + len(stall))
        if pick >= len(succ):
            # A stall past the release timeout in a model that has no timeout (release =
            # "deferred_ack"): time passes, the model does nothing, the code may release.
            harness.clock.jump_to(stall[pick - len(succ)])
            if not _guarded(res, harness, "a stall past the release deadline", harness.tick):
                return res
            res.stalls.append(len(res.steps))
            mismatches = compare(concrete, state, harness, committed)
            if mismatches:
                res.mismatches, res.switch = mismatches, "release"
                res.step_index = len(res.steps)
                return res
            continue
        inst, data = succ[pick]
        state = State(data)
        res.steps.append(inst)
        r = inst.args[0]
        last[r] = inst.action
        failed = concrete.value(state, "poll", (r,)) == "failed"
        take = (
            partial(harness.done_as, r, failed)
            if inst.action == "done"
            else partial(harness.apply, inst)
        )
        if not _guarded(res, harness, str(inst), take):
            return res
        if concrete.value(state, "poll", (r,)) == "failed" and inst.action in ("fail", "done"):
            failed_first.add(r)
        state = _close(concrete, state, harness, res, committed, last)
        mismatches = compare(concrete, state, harness, committed)
        if inst.action == "arrive" and over_long is not None:
            at_intake = intake_mismatch(concrete, state, r, over_long)
            mismatches = [at_intake, *mismatches] if at_intake else mismatches
        arrived = inst.action == "arrive" and counts is not None
        pages = pages_mismatch(concrete, state, r, counts) if arrived and counts else None
        if pages is not None:
            # The incident's mechanism, in pages: shown first, it names the switch.
            mismatches = [Mismatch(r, "pages_sent_of_reserved", *pages), *mismatches]
            over_p = bool(concrete.value(state, "over_p", (r,)))
            res.mismatches, res.switch = mismatches, switch_for_pages(pages[0], pages[1], over_p)
            res.step_index = len(res.steps)
            return res
        if mismatches:
            res.mismatches = mismatches
            res.switch = switch_for(mismatches[0], last, failed_first)
            res.step_index = len(res.steps)
            return res
    return res


def _guarded(res: WalkResult, h: Harness, action: str, call: Any) -> bool:
    """Run ``call`` (into the release's code); an exception it raises in the loaded
    ``sglang/`` tree is recorded on ``res`` as a finding (False); kvproof's own propagates."""
    try:
        call()
    except Exception as exc:  # the release's code may raise anything; kvproof's re-raises
        raised = upstream_raise(exc, h.root, len(res.steps), action)
        if raised is None:
            raise
        res.raised, res.traceback = raised, trace_text(exc)
        return False
    return True


def _stall_candidates(concrete: Concrete, h: Harness) -> list[float]:
    """Deadlines of the code's holds, when the model has no ``timeout`` of its own."""
    if any(a.name == "timeout" for a in concrete.protocol.actions):
        return []
    return sorted(d for r, d in h.release_deadline.items() if h.pages.of(r) and h.clock.now < d)


def _consistent_jump(concrete: Concrete, after: State, h: Harness, inst: ActionInstance) -> bool:
    """A clock jump is one of the model's walks only if the model can also take what it
    expires for the other requests."""
    target = h.jump_target(inst)
    if target is None:
        return True
    state: State | None = after
    for other in h.expiring(target, inst.args[0]):
        state = concrete.step(state, other) if state is not None else None
    return state is not None


def _close(
    concrete: Concrete,
    state: State,
    h: Harness,
    res: WalkResult,
    committed: set[int],
    last: dict[int, str],
) -> State:
    """The model's own actions for what the code decided in the same pass."""
    for r in range(concrete.inst.sizes["Req"]):
        dphase = concrete.value(state, "dphase", (r,))
        poll = concrete.value(state, "poll", (r,))
        wanted: list[str] = []
        if r in h.outcome.committed and r not in committed and dphase == "transfer":
            wanted.append("commit")
        if r in h.outcome.aborted and dphase == "transfer" and poll == "failed":
            wanted.append("abort")
        if h.waiting_expired(r) and dphase == "transfer":
            wanted.append("give_up")
        if h.release_expired(r) and dphase == "draining":
            wanted.append("timeout")
        for action in wanted:
            nxt = concrete.step(state, ActionInstance(action, (r,)))
            if nxt is None:
                continue  # the model cannot follow: the comparison will say so
            state = nxt
            res.steps.append(ActionInstance(action, (r,)))
            if action == "commit":
                committed.add(r)
            else:
                last.setdefault(r, action)
    return state


def init_values(concrete: Concrete, state: State) -> dict[str, Any]:
    from kvproof.model.lang.trace import initial_assignment

    return initial_assignment(concrete, state)
