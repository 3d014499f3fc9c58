"""BMC's ``settled`` hook (``model/search/bmc.py``): a proof's answer ends the search at the
first depth where every unresolved invariant is proved, whenever the answer arrives, and
leaves every counterexample as the full-depth search returns it; its inductive invariant,
asserted from then on, changes no verdict and no shortest length."""

from __future__ import annotations

import pytest

from kvproof.checker.distrib.fork import fork_call
from kvproof.checker.verify.driver import BackgroundSubset
from kvproof.checker.verify.protocols import protocol_for
from kvproof.model.search.bmc import Settlement, bmc
from kvproof.spec.variant import load_variant

SIZES = {"Req": 2, "Page": 3}


def _answer_at(when: int, names: frozenset[str]):  # type: ignore[no-untyped-def]
    asked: list[int] = []

    def settled(k: int, unresolved: frozenset[str], last: bool) -> Settlement | None:
        asked.append(k)
        return Settlement(names) if k >= when or last else None

    return settled, asked


def test_the_stop_depth_does_not_depend_on_when_the_answer_arrives() -> None:
    protocol = protocol_for(load_variant("sglang-0.5.19-pd"))
    # Each search in a fork of this same process: Z3's one context per process otherwise
    # lets an earlier search steer which (equally short) counterexample a later one picks.
    full = fork_call(lambda: bmc(protocol, SIZES, 10, variant="v")).result()
    held = frozenset(r.invariant for r in full.results if r.holds)
    assert held, "the variant must keep an invariant for this test"
    last_cex = max(r.shortest or 0 for r in full.results if not r.holds)
    stops = set()
    for when in (0, last_cex, 9):
        settled, _ = _answer_at(when, held)
        got = fork_call(lambda s=settled: bmc(protocol, SIZES, 10, variant="v", settled=s)).result()
        stops.add(got.depth)
        assert got.proved == tuple(sorted(held))
        for a, b in zip(full.results, got.results, strict=True):
            assert (a.invariant, a.holds, a.shortest) == (b.invariant, b.holds, b.shortest)
            if a.trace is not None:
                assert a.trace.steps == b.trace.steps  # the same counterexample
    assert stops == {last_cex}


def test_an_answer_that_proves_too_little_keeps_the_full_depth() -> None:
    protocol = protocol_for(load_variant("sglang-0.5.19-pd"))
    settled, asked = _answer_at(0, frozenset())
    got = bmc(protocol, SIZES, 10, variant="v", settled=settled)
    assert got.depth == 10 and got.proved == ()
    assert asked == [0]  # asked once: an answer is final


@pytest.mark.parametrize(
    "name", ["sglang-0.5.19-pd", "sglang-pd-early-free-abort", "vllm-stale-block-lease"]
)
def test_a_proofs_inductive_invariant_changes_no_verdict_and_no_length(name: str) -> None:
    """The background proof's invariant, asserted at every step from its wait depth on,
    prunes only unreachable states: each buggy variant keeps its verdicts and shortest
    lengths at a depth past the wait (the deep queries it exists to cut)."""
    protocol = protocol_for(load_variant(name))
    plain = fork_call(lambda: bmc(protocol, SIZES, 11, variant="v")).result()

    def hinted() -> object:
        hook = BackgroundSubset(protocol, wait=3)
        try:
            return bmc(protocol, SIZES, 11, variant="v", settled=hook)
        finally:
            hook.close()

    got = fork_call(hinted).result()
    assert got.proved, f"{name}: the proof must settle something for this test"
    for a, b in zip(plain.results, got.results, strict=True):
        assert (a.invariant, a.holds, a.shortest) == (b.invariant, b.holds, b.shortest)
