"""A late ABORT_ACK of an earlier abort of the room (``stale_ack``, E21) and the switch that
decides it (``ack_generation``): the model, and the reference engine replaying it.

0.5.22+ check the ACK's generation (nothing changes); 0.5.19-0.5.21 count it while the
room is held, and free pages whose own writes may still land.
"""

from __future__ import annotations

import pytest

from kvproof.checker.conformance.replay import replay_trace
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import Trace
from kvproof.spec.variant import load_variant

INIT = {"over_p": {(0,): False, (1,): False}, "over_d": {(0,): False, (1,): False}}
# r0's abort is held with its write in flight; then the late ACK; then the write lands.
HELD = [("arrive", 0), ("alloc", 0, 0), ("send", 0), ("post", 0, 0), ("abort", 0)]


def _steps(*rest: tuple[object, ...]) -> tuple[ActionInstance, ...]:
    return tuple(ActionInstance(str(s[0]), tuple(s[1:])) for s in (*HELD, *rest))  # type: ignore[arg-type]


def _walk(name: str, steps: tuple[ActionInstance, ...]) -> list[object]:
    c = Concrete(Instance(protocol_of(load_variant(name)), {"Req": 2, "Page": 2}))
    state = c.make_state(INIT)
    states = [state]
    for inst in steps:
        nxt = c.step(state, inst)
        assert nxt is not None, inst
        states.append(state := nxt)
    return states


def test_a_checked_generation_ignores_the_late_ack() -> None:
    before, after = _walk("sglang-0.5.22-pd", _steps(("stale_ack", 0)))[-2:]
    assert before == after  # the ACK names another abort: decode still holds the page


def test_an_unchecked_one_frees_with_the_write_in_flight() -> None:
    c = Concrete(Instance(protocol_of(load_variant("sglang-0.5.21-pd")), {"Req": 2, "Page": 2}))
    *_, state = _walk("sglang-0.5.21-pd", _steps(("stale_ack", 0), ("land", 0, 0)))
    assert c.value(state, "dphase", (0,)) == "done"
    assert "no_stray_write" in c.violated(state)


@pytest.mark.parametrize("name", ["sglang-0.5.19-pd", "sglang-0.5.21-pd", "sglang-0.5.22-pd"])
def test_the_event_is_push_with_abort_acks_only(name: str) -> None:
    assert "stale_ack" in {a.name for a in protocol_of(load_variant(name)).actions}
    for other in ("vllm-0.34-nixl-pull", "vllm-0.34-nixl-push"):
        assert "stale_ack" not in {a.name for a in protocol_of(load_variant(other)).actions}


@pytest.mark.parametrize(
    ("name", "freed"), [("sglang-0.5.22-pd", False), ("sglang-0.5.21-pd", True)]
)
def test_the_reference_engine_does_what_the_model_does(name: str, freed: bool) -> None:
    """Replayed in lockstep on ``refimpl`` (every step's state compared with the model's):
    the engine's rule (``refimpl/rules/stale_ack.py``) mirrors the model's."""
    steps = _steps(("stale_ack", 0), ("land", 0, 0))
    trace = Trace(name, {"Req": 2, "Page": 2}, INIT, steps, None, {"reserve": [1, 1]})
    report = replay_trace(trace, load_variant(name), drain=False)
    assert report.divergence is None and report.crash is None, report.divergence
    assert report.steps_applied == len(steps)
    assert any(name == "no_stray_write" for _, name in report.engine_violations) is freed
