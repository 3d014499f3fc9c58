"""The model's side of the status comparison (``checker/conform/model_side.py``): what
prefill reports at ``done`` is read from the state before the step, so the status decode
then holds is left to the code's ``update_status`` (no wheel needed)."""

from __future__ import annotations

from kvproof.checker.conform import model_side
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.spec.variant import load_variant


def _walk(variant: str, actions: list[ActionInstance]) -> tuple[Concrete, list[State]]:
    """The states of a walk on r0 (a prompt that fits), from the first initial state
    where every prompt fits."""
    concrete = Concrete(Instance(protocol_of(load_variant(variant)), {"Req": 1, "Page": 1}))
    state = next(
        s
        for s in concrete.initial_states()
        if not concrete.value(s, "over_p", (0,)) and not concrete.value(s, "over_d", (0,))
    )
    states = [state]
    for inst in actions:
        nxt = concrete.step(state, inst)
        assert nxt is not None, inst
        state = nxt
        states.append(state)
    return concrete, states


SENT = [
    ActionInstance("arrive", (0,)),
    ActionInstance("alloc", (0, 0)),
    ActionInstance("send", (0,)),
    ActionInstance("post", (0, 0)),
    ActionInstance("land", (0, 0)),
]
DONE = ActionInstance("done", (0,))


def test_prefill_reports_success_unless_a_pending_abort_wins() -> None:
    # sglang-0.5.22-pd: a pending abort in prefill wins over Success (#36612).
    concrete, states = _walk("sglang-0.5.22-pd", [*SENT, ActionInstance("p_abort", (0,))])
    assert model_side.reported_status(concrete, states[-2], DONE) == "success"
    assert model_side.reported_status(concrete, states[-1], DONE) == "failed"
    assert model_side.reported_status(concrete, states[-1], SENT[0]) is None
    # sglang-0.5.19-pd: Success overwrites the pending abort.
    concrete, states = _walk("sglang-0.5.19-pd", [*SENT, ActionInstance("p_abort", (0,))])
    assert model_side.reported_status(concrete, states[-1], DONE) == "success"


def test_decode_status_is_pending_until_the_transfer_concludes() -> None:
    concrete, states = _walk("sglang-0.5.22-pd", [*SENT, DONE])
    seen = [model_side.decode_status(concrete, s, 0) for s in states]
    assert seen == [None, "pending", "pending", "pending", "pending", "pending", "success"]
    concrete, states = _walk("sglang-0.5.22-pd", [*SENT[:3], ActionInstance("abort", (0,))])
    assert model_side.decode_status(concrete, states[-1], 0) == "failed"


def test_prefill_status_follows_the_model_s_prefill_phase() -> None:
    """Push: "pending" while prefill waits or writes, "failed" once an abort reached it,
    the reported status once it concluded; with ``success_overwrites_abort`` a pending
    abort's status is left undecided (the model keeps no order of abort and metadata)."""
    concrete, states = _walk("sglang-0.5.22-pd", [*SENT, ActionInstance("p_abort", (0,)), DONE])
    seen = [model_side.prefill_status(concrete, s, 0) for s in states]
    assert seen == [None, *["pending"] * 5, "failed", "failed"]
    concrete, states = _walk("sglang-0.5.22-pd", [*SENT, DONE])
    assert model_side.prefill_status(concrete, states[-1], 0) == "success"
    concrete, states = _walk("sglang-0.5.19-pd", [*SENT, ActionInstance("p_abort", (0,)), DONE])
    assert [model_side.prefill_status(concrete, s, 0) for s in states[-2:]] == [None, "success"]
