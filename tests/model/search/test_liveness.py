"""Liveness semantics (issue #29): a reported lasso is a real, fair loop; an unfair one
(starving an enabled engine step) is never reported; both engines say the same."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from bmc_lasso_oracle import bmc_lassos

from kvproof.checker.verify.liveness import LIVENESS_SIZES
from kvproof.checker.verify.protocols import protocol_for
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import BOOL, Action, ActionKind, Protocol, Var
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.liveness import Fair, Liveness
from kvproof.model.lang.trace import replay
from kvproof.model.search.lasso import find_lassos
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

ENGINES = {
    "explicit": lambda p, sizes: find_lassos(p, sizes),
    "bmc": lambda p, sizes: bmc_lassos(p, sizes, depth=6),
}


def _toy(serve_kind: ActionKind, fair: tuple[Fair, ...] = ()) -> Protocol:
    """One request: ``tick`` flips a bit forever (an engine step), ``serve`` answers it."""

    def tick(s: Any, r: Any) -> None:
        s.require(s.not_(s.served(r)))
        s.set("ticks", (r,), s.not_(s.ticks(r)))

    def serve(s: Any, r: Any) -> None:
        s.require(s.not_(s.served(r)))
        s.set("served", (r,), True)

    return Protocol(
        name="toy",
        sorts=("Req",),
        vars=(Var("served", ("Req",), BOOL), Var("ticks", ("Req",), BOOL)),
        actions=(
            Action("tick", ("Req",), tick, kind=ActionKind.ENGINE),
            Action("serve", ("Req",), serve, kind=serve_kind),
        ),
        invariants=(),
        init=lambda s: True,
        liveness=(
            Liveness("served", ("Req",), lambda s, r: True, lambda s, r: s.served(r), "served"),
        ),
        fair=fair,
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_a_loop_starving_an_enabled_engine_step_is_never_reported(engine: str) -> None:
    result = ENGINES[engine](_toy(ActionKind.ENGINE), {"Req": 1})
    assert result.result("served").holds


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unfair_fault_gives_a_real_loop(engine: str) -> None:
    protocol = _toy(ActionKind.FAULT)
    result = ENGINES[engine](protocol, {"Req": 1})
    trace = result.result("served").trace
    assert trace is not None and trace.loop is not None
    # The loop is really a loop, and it takes the fair tick (stuttering would starve it).
    states = replay(trace, Concrete(Instance(protocol, {"Req": 1})))
    assert states[trace.loop] == states[-1]
    assert [str(a) for a in trace.steps[trace.loop :]] == ["tick(0)", "tick(0)"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_fairness_obligation_on_a_fault_removes_the_lasso(engine: str) -> None:
    fair = (Fair("serve", "an assumption"),)
    assert ENGINES[engine](_toy(ActionKind.FAULT, fair), {"Req": 1}).holds


@pytest.mark.parametrize("engine", ENGINES)
def test_weak_fairness_under_a_condition_is_weak(engine: str) -> None:
    # serve is fair only where ticks holds: the tick loop leaves those states every other
    # step, so serve is not continuously enabled and the loop stays fair.
    fair = (Fair("serve", "when ticking", lambda s, r: s.ticks(r)),)
    assert not ENGINES[engine](_toy(ActionKind.FAULT, fair), {"Req": 1}).holds


def test_fairness_on_an_action_the_protocol_lacks_is_bad_input() -> None:
    protocol = _toy(ActionKind.FAULT, (Fair("reboot", "an assumption"),))
    with pytest.raises(KvproofInputError, match=r"'reboot'.*no such action"):
        find_lassos(protocol, {"Req": 1})


def test_a_property_over_a_sort_the_protocol_lacks_is_bad_input() -> None:
    bad = Liveness("gone", ("Block",), lambda s, b: True, lambda s, b: True)
    protocol = dataclasses.replace(_toy(ActionKind.ENGINE), liveness=(bad,))
    with pytest.raises(KvproofInputError, match=r"'gone' is over sort 'Block'"):
        find_lassos(protocol, {"Req": 1})


def test_quarantine_holds_a_page_forever_after_the_prefill_dies() -> None:
    variant = load_variant("sglang-pd-quarantine")
    protocol = protocol_for(variant, liveness=True)
    result = find_lassos(protocol, LIVENESS_SIZES, variant=variant.name)
    trace = result.result("pages_return").trace
    assert trace is not None and trace.loop is not None
    states = replay(trace, Concrete(Instance(protocol, LIVENESS_SIZES)))
    concrete = Concrete(Instance(protocol, LIVENESS_SIZES))
    assert states[trace.loop] == states[-1]
    assert "crash" in {a.action for a in trace.steps[: trace.loop]}
    # In every state of the loop the page is still the ended request's.
    r, p = result.result("pages_return").instance  # type: ignore[misc]
    for state in states[trace.loop :]:
        assert concrete.value(state, "owns", (r, p))
        assert concrete.value(state, "dphase", (r,)) in ("draining", "done")
    # A prefill that always reports (no crash) makes the quarantine live.
    live = dataclasses.replace(
        variant, assume={**variant.assume, "prefill_eventually_reports": "x"}
    )
    assert find_lassos(protocol_for(live, liveness=True), LIVENESS_SIZES).holds


def test_fixed_release_is_live_only_under_transfer_eventually_ends() -> None:
    variant = load_variant("sglang-0.5.22-pd")
    assert find_lassos(protocol_for(variant, liveness=True), LIVENESS_SIZES).holds
    hidden = find_lassos(
        protocol_for(variant, without=("transfer_eventually_ends",), liveness=True), LIVENESS_SIZES
    )
    assert not hidden.result("answered").holds
    assert hidden.complete  # the whole graph at this size: a holds is every depth


def test_safety_protocol_has_no_crash_and_liveness_protocol_does() -> None:
    variant = load_variant("sglang-0.5.22-pd")
    from kvproof.model.handoff import protocol_of

    assert "crash" not in {a.name for a in protocol_of(variant).actions}
    assert "crash" in {a.name for a in protocol_for(variant, liveness=True).actions}
