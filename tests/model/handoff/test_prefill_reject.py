"""``prefill_reject`` (``model/handoff/rules/reserve.py::send``): what prefill does with the
over-long prompt's queued stub after its forward. "send_stub" (0.5.15-0.5.19) writes its one
page and reports Success, the incident's 200; "retire_after_forward" (0.5.20) stops prefill
at once, nothing written or reported, and decode waits until it gives up or the client
aborts."""

from __future__ import annotations

import dataclasses

from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.spec.variant import Variant, load_variant

OVER_LONG = {"over_p": {(0,): True}, "over_d": {(0,): False}}
SENT = [("arrive", 0), ("alloc", 0, 0), ("send", 0)]


def _after_send(variant: Variant) -> tuple[Concrete, object]:
    c = Concrete(Instance(protocol_of(variant), {"Req": 1, "Page": 1}))
    state = c.make_state(OVER_LONG)
    for step in SENT:
        nxt = c.step(state, ActionInstance(str(step[0]), tuple(step[1:])))  # type: ignore[arg-type]
        assert nxt is not None, step
        state = nxt
    return c, state


def test_0_5_20_retires_the_stub_after_its_forward() -> None:
    c, state = _after_send(load_variant("sglang-0.5.20-pd"))
    assert c.value(state, "pphase", (0,)) == "stopped"
    assert c.value(state, "poll", (0,)) == "transferring"  # decode is told nothing
    # nothing to post, nothing to report: the 200 of the incident cannot follow
    assert c.step(state, ActionInstance("post", (0, 0))) is None
    assert c.step(state, ActionInstance("done", (0,))) is None
    given_up = c.step(state, ActionInstance("give_up", (0,)))  # the waiting timeout
    assert given_up is not None and c.value(given_up, "resp", (0,)) == "error"
    assert not c.value(given_up, "owns", (0, 0))  # freed at once


def test_send_stub_keeps_every_other_variant_s_protocol() -> None:
    v = load_variant("sglang-0.5.20-pd")
    sent = dataclasses.replace(
        v, switches=dataclasses.replace(v.switches, prefill_reject="send_stub")
    )
    c, state = _after_send(sent)
    assert c.value(state, "pphase", (0,)) == "active"
    posted = c.step(state, ActionInstance("post", (0, 0)))
    assert posted is not None
    assert load_variant("sglang-0.5.19-pd").switches.prefill_reject == "send_stub"
