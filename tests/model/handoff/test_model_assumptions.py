"""Assumptions as guards: in force they disable an environment step, dropped they give back
the protocol as written, with the counterexample they were hiding."""

from __future__ import annotations

import pytest

from kvproof.model.handoff import build_handoff, protocol_of
from kvproof.model.handoff.assumptions import active, apply, fair_of, guards
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.search.bmc import bmc
from kvproof.model.search.induction import prove
from kvproof.spec.assumptions import ASSUMPTIONS, FAIRNESS
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

V22 = load_variant("sglang-0.5.22-pd")
STALL = [("arrive", (0,)), ("alloc", (0, 0)), ("send", (0,)), ("post", (0, 0)), ("abort", (0,))]


def _run(protocol, steps):  # type: ignore[no-untyped-def]
    concrete = Concrete(Instance(protocol, {"Req": 1, "Page": 1}))
    state = concrete.make_state({})
    for name, args in steps:
        state = concrete.step(state, ActionInstance(name, args))
        assert state is not None, name
    return concrete, state


def test_bounded_transfer_disables_the_timeout_while_a_write_is_in_flight() -> None:
    timeout = ActionInstance("timeout", (0,))
    concrete, state = _run(protocol_of(V22), STALL)
    assert concrete.step(state, timeout) is None
    raw, state = _run(protocol_of(V22, without=("bounded_transfer",)), STALL)
    assert raw.step(state, timeout) is not None
    # once the write landed and prefill stopped, the timeout is allowed again
    concrete, state = _run(protocol_of(V22), [*STALL, ("land", (0, 0)), ("abort_seen", (0,))])
    assert concrete.step(state, timeout) is not None


def test_dropping_every_assumption_gives_the_protocol_as_written() -> None:
    assert protocol_of(V22, without=tuple(V22.assume)).assumptions == ()
    assert protocol_of(V22).assumptions == ("bounded_transfer", "transfer_eventually_ends")
    plain = build_handoff(V22.switches)
    assert [a.name for a in protocol_of(V22, without=("bounded_transfer",)).actions] == [
        a.name for a in plain.actions
    ]


def test_every_declared_assumption_is_realised() -> None:
    for name, info in ASSUMPTIONS.items():
        if info.kind == FAIRNESS:  # weak fairness on its events, in liveness checks only
            assert not guards(name, V22.switches)
            assert fair_of(name, build_handoff(V22.switches, peer_death=True))
        else:
            assert guards(name, V22.switches)
    with pytest.raises(KvproofInputError):
        guards("no_such_assumption", V22.switches)
    with pytest.raises(KvproofInputError, match="does not assume"):
        active(V22, ("lease_outlives_read",))
    assert apply(build_handoff(V22.switches), (), V22.switches).assumptions == ()


def test_without_bounded_transfer_a_stalled_write_lands_in_a_freed_page() -> None:
    result = bmc(
        protocol_of(V22, without=("bounded_transfer",)),
        {"Req": 1, "Page": 1},
        7,
        invariants=["no_stray_write"],
    )
    r = result.result("no_stray_write")
    assert not r.holds and r.shortest == 7
    actions = [s.action for s in r.trace.steps]
    assert "timeout" in actions and actions[-1] == "land", actions
    held = bmc(protocol_of(V22), {"Req": 1, "Page": 1}, 7, invariants=["no_stray_write"])
    assert held.holds


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "name"),
    [
        ("sglang-0.5.22-pd", "bounded_transfer"),
        ("vllm-nixl-fixed", "lease_outlives_read"),
        ("sglang-pd-dead-prefill-free", "silent_peer_is_stopped"),
    ],
)
def test_fixed_variants_need_their_assumptions_for_the_proof(variant: str, name: str) -> None:
    v = load_variant(variant)
    assert prove(protocol_of(v)).proved
    assert not prove(protocol_of(v, without=(name,))).proved
