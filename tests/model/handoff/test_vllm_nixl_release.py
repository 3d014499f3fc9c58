"""vLLM 0.34.0's NIXL connector in the model (issue 40): the three behaviours its code shows,
each from the switch or assumption that makes it, and gone when that switch is the safe one.

1. push: decode aborts while waiting for KV that never comes; its pages are held forever
   (liveness ``pages_return``, even with a prefill that never dies);
2. push: prefill's lease expires while its WRITE is in flight (a stale read);
3. pull: prefill's lease expires before decode's read lands (a stale read).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kvproof.checker.traces.corpus import TRACES_DIR, load
from kvproof.checker.verify.liveness import check_liveness
from kvproof.checker.verify.protocols import protocol_for
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.search.explore import explore
from kvproof.model.search.lasso import find_lassos
from kvproof.spec.variant import Variant, load_variant

PULL, PUSH = "vllm-0.34-nixl-pull", "vllm-0.34-nixl-push"
LIVE = {"Req": 2, "Page": 1}


def _with(name: str, **switches: Any) -> Variant:
    v = load_variant(name)
    return dataclasses.replace(v, switches=dataclasses.replace(v.switches, **switches))


def _lasso(variant: Variant, drop: tuple[str, ...] = ()) -> Any:
    protocol = protocol_for(variant, None, (), liveness=True)
    kept = tuple(a for a in protocol.actions if a.name not in drop)
    found = find_lassos(
        dataclasses.replace(protocol, actions=kept),
        LIVE,
        variant=variant.name,
        names=("pages_return",),
    )
    (result,) = found.results
    return result


def test_push_decode_abort_holds_pages_forever_with_a_live_prefill() -> None:
    # Behaviour 1: prefill_eventually_reports is in force (no crash), and still a lasso.
    variant = load_variant(PUSH)
    protocol = protocol_for(variant, liveness=True)
    check = check_liveness(variant, protocol, names=("pages_return",), necessity=False)
    (result,) = check.result.results
    assert not result.holds and result.trace is not None
    actions = [s.action for s in result.trace.steps]
    assert "crash" not in actions and "abort" in actions
    # Without the silent WRITE failure, the lease expiring before the WRITE does it.
    expiry = _lasso(load_variant(PUSH), drop=("fail",))
    steps = [s.action for s in expiry.trace.steps]
    assert not expiry.holds and "expire" in steps and "post" not in steps
    assert steps.index("abort") < len(steps) and "crash" not in steps


def test_the_lasso_is_gone_when_the_abort_reaches_prefill() -> None:
    # A prefill told of the abort ACKs it once it stopped (SGLang's design): the pages
    # return whatever stopped it. Reporting failures to decode alone is not enough: the
    # lease still expires before the WRITE, silently.
    assert _lasso(_with(PUSH, abort_notifies_prefill=True)).holds
    assert not _lasso(_with(PUSH, failure_status="failed")).holds


@pytest.mark.parametrize("name", [PULL, PUSH])
def test_the_stale_read_is_a_lease_expiring_under_the_transfer(name: str) -> None:
    # Behaviours 2 and 3: the stored counterexample frees the source with the transfer in
    # flight (post, expire, land), and decode commits it with a 200.
    trace = load()[f"{name}.isolation"]
    actions = [s.action for s in trace.steps]
    assert actions.index("post") < actions.index("expire") < actions.index("land")
    assert actions[-1] == "commit" and trace.meta["shows"] == "leak"


@pytest.mark.parametrize(
    ("name", "safe"),
    [(PULL, {"prefill_hold": "until_read"}), (PUSH, {"prefill_hold": "until_read"})],
)
def test_holding_the_source_until_the_transfer_ends_removes_the_stale_read(
    name: str, safe: dict[str, Any]
) -> None:
    sizes = {"Req": 2, "Page": 2}
    buggy = explore(protocol_for(load_variant(name), None, ()), sizes, variant=name)
    fixed = explore(protocol_for(_with(name, **safe), None, ()), sizes, variant=name)
    assert not buggy.holds("isolation") and fixed.holds("isolation")
    assert buggy.holds("no_stray_write") and fixed.holds("no_stray_write")


def _run(name: str, steps: list[tuple[str, tuple[int, ...]]]) -> tuple[Concrete, Any]:
    protocol = protocol_for(load_variant(name), None, ())
    concrete = Concrete(Instance(protocol, {"Req": 1, "Page": 1}))
    state = concrete.make_state({"over_p": {(0,): False}, "over_d": {(0,): False}})
    for action, args in steps:
        nxt = concrete.step(state, ActionInstance(action, args))
        assert nxt is not None, (action, args)
        state = nxt
    return concrete, state


START = [("arrive", (0,)), ("alloc", (0, 0)), ("send", (0,))]


def test_push_expiry_before_any_write_stops_prefill_silently() -> None:
    # push_worker.py: the unmatched request is evicted; P never writes and never tells D.
    concrete, s = _run(PUSH, [*START, ("expire", (0,))])
    assert concrete.value(s, "pphase", (0,)) == "stopped"
    assert concrete.value(s, "poll", (0,)) == "transferring"  # decode is not told
    assert concrete.step(s, ActionInstance("post", (0, 0))) is None
    concrete, s = _run(PUSH, [*START, ("abort", (0,)), ("expire", (0,))])
    assert concrete.value(s, "dphase", (0,)) == "draining"
    assert concrete.step(s, ActionInstance("ack", (0,))) is None  # no finished_recving


def test_push_expiry_under_a_write_lets_it_land_and_report() -> None:
    steps = [*START, ("post", (0, 0)), ("expire", (0,)), ("land", (0, 0)), ("done", (0,))]
    concrete, s = _run(PUSH, steps)
    assert concrete.value(s, "poll", (0,)) == "success"
    assert not concrete.value(s, "holds", (0, 0))  # the WRITE carried the reused blocks


def test_push_failure_is_silent_and_the_abort_never_reaches_prefill() -> None:
    concrete, s = _run(PUSH, [*START, ("fail", (0,))])
    assert concrete.value(s, "poll", (0,)) == "transferring"
    protocol = protocol_for(load_variant(PUSH), None, ())
    assert "abort_seen" not in {a.name for a in protocol.actions}  # no ABORT to prefill
    done = [("post", (0, 0)), ("land", (0, 0)), ("done", (0,)), ("ack", (0,))]
    concrete, s = _run(PUSH, [*START, ("abort", (0,)), *done])
    assert concrete.value(s, "dphase", (0,)) == "done"  # freed on prefill's completion


def test_the_lasso_files_are_stored_beside_the_traces() -> None:
    folder = TRACES_DIR / "lasso"
    assert (folder / f"{PUSH}.pages_return.jsonl").is_file()
    assert (folder / f"{PUSH}.pages_return.expiry.jsonl").is_file()
