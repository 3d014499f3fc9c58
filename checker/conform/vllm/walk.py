"""One conform walk against vLLM: the model chooses each step, the release's code takes it
through ``Pair``, and the projection (``project.py``) is compared after every step.

The code decides, and the model is asked to follow on its evidence: ``commit`` when the
scheduler ran the request, ``expire`` when prefill's worker reaped the lease before the
transfer ended, ``ack`` when decode freed an aborted request's blocks. Time passing is a
step of every walk (``stall``: the clock jumps past the next lease the code stamped, no
heartbeat delivered), as is a heartbeat reaching prefill; transfer failures and prefill
aborts are drawn only with ``faults``. A drawn ``ack`` is the lasso's loop: the code gets
``REPLAY`` more engine steps, each past every deadline, to free the blocks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from kvproof.checker.conform.vllm.pair import Pair
from kvproof.checker.conform.vllm.project import Mismatch, compare, rid, switch_for
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance

ENV_FAULTS = frozenset({"fail", "p_abort"})
CODE_DECIDES = frozenset({"commit", "crash", "timeout", "give_up"})
REPLAY = 8  # engine steps the lasso's loop is replayed for on the real scheduler


@dataclass
class WalkResult:
    steps: list[ActionInstance] = field(default_factory=list)
    init: State | None = None
    mismatches: list[Mismatch] = field(default_factory=list)
    switch: str | None = None
    stalls: list[int] = field(default_factory=list)
    replayed: int | None = None  # decode requests still holding blocks after REPLAY steps


def walk(
    concrete: Concrete,
    inits: list[State],
    pair: Pair,
    variant: Any,
    rng: random.Random,
    *,
    faults: bool,
    max_steps: int,
) -> WalkResult:
    state = rng.choice(inits)
    res = WalkResult(init=state)
    committed: set[int] = set()
    lost_inflight: set[int] = set()
    last: dict[int, str] = {}
    for _ in range(max_steps):
        succ = [
            (inst, data)
            for inst, data in concrete.successor_data(state.data)
            if inst.action not in CODE_DECIDES
            and (faults or inst.action not in ENV_FAULTS)
            and _code_can(pair, inst)
        ]
        extra = (["stall"] if pair.deadlines() else []) + (["hb"] if pair.heartbeats else [])
        if not succ and not extra:
            break
        pick = rng.randrange(len(succ) + len(extra))
        if pick >= len(succ):
            if extra[pick - len(succ)] == "stall":
                pair.stall_until(pair.deadlines()[0])
                res.stalls.append(len(res.steps))
            else:
                pair.heartbeat()
        else:
            inst, data = succ[pick]
            if inst.action == "expire" and _inflight(concrete, state, inst.args[0]):
                lost_inflight.add(inst.args[0])
            state = State(data)
            res.steps.append(inst)
            last[inst.args[0]] = inst.action
            _apply(pair, inst)
            if inst.action == "ack":
                res.replayed = pair.replay(REPLAY)
        state = _close(concrete, state, pair, res, committed, lost_inflight, last)
        mismatches = compare(concrete, state, pair, committed, lost_inflight)
        if mismatches:
            res.mismatches = mismatches
            res.switch = switch_for(mismatches[0], variant, last)
            return res
    return res


def _code_can(pair: Pair, inst: ActionInstance) -> bool:
    """The model's ``expire`` is a jump to a lease the code holds; it has none once the
    request was read (or reaped)."""
    if inst.action == "expire":
        return rid(inst.args[0]) in pair.pw._reqs_to_send
    return True


def _inflight(concrete: Concrete, state: State, r: int) -> bool:
    pages = concrete.inst.sizes["Page"]
    return any(concrete.value(state, "inflight", (r, p)) for p in range(pages))


def _apply(pair: Pair, inst: ActionInstance) -> None:
    r, name = inst.args[0], rid(inst.args[0])
    act = inst.action
    if act == "arrive":
        pair.arrive(name)
    elif act == "send":  # vLLM allocates and parks in one schedule(): decode sends then
        pair.alloc(name)
    elif act == "ack" and pair.mode == "pull":
        pair.drain(name)
    elif act in ("post", "land"):
        getattr(pair, act)(name, inst.args[1])
    elif act in ("done", "fail", "abort", "p_abort", "expire", "finish"):
        getattr(pair, act)(name)
    else:  # alloc, step, abort_seen, push's ack: the code moves on its own
        pair.settle()
    del r


def _close(
    concrete: Concrete,
    state: State,
    pair: Pair,
    res: WalkResult,
    committed: set[int],
    lost_inflight: set[int],
    last: dict[int, str],
) -> State:
    """The model's own actions for what the code decided in the same steps."""
    for r in range(concrete.inst.sizes["Req"]):
        name = rid(r)
        wanted: list[str] = []
        if name in pair.ran and r not in committed:
            wanted.append("commit")
        if name in pair.src_freed_early and concrete.value(state, "src_ok", (r,)):
            if _inflight(concrete, state, r):
                lost_inflight.add(r)
            wanted.append("expire")
        if concrete.value(state, "dphase", (r,)) == "draining" and not pair.d.blocks(name):
            wanted.append("ack")
        known = {a.name for a in concrete.protocol.actions}
        for action in (a for a in wanted if a in known):
            nxt = concrete.step(state, ActionInstance(action, (r,)))
            if nxt is None:
                continue  # the model cannot follow: the comparison says so
            state = nxt
            res.steps.append(ActionInstance(action, (r,)))
            last[r] = action
            if action == "commit":
                committed.add(r)
    return state
