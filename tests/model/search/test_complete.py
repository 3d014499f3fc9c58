"""``check --complete`` on kvproof's handoff: the unbounded proof as the fast path for a
fixed variant, the finite methods when it fails, and BMC's settled-depth lemmas."""

from __future__ import annotations

import pytest

from kvproof.checker.verify.protocols import protocol_for
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import replay
from kvproof.model.search.bmc import bmc
from kvproof.model.search.complete import check_complete
from kvproof.spec.variant import load_variant

FIXED = "sglang-0.5.22-pd"


def test_fixed_variant_at_3_requests_4_pages_is_settled_by_the_proof() -> None:
    # BFS cannot exhaust this instance (17 GB after 12 min); the strengthening proves it
    # for every size, this one included, and says so.
    result = check_complete(protocol_for(load_variant(FIXED)), {"Req": 3, "Page": 4})
    assert result.verdict == "holds" and result.method == "proof"
    assert result.conjuncts and "proved for every size" in result.summary
    assert result.to_json()["method"] == "proof"
    # ``check`` hands over the proof it already has: not asked again, same answer
    from kvproof.model.search.induction import prove

    protocol = protocol_for(load_variant(FIXED))
    again = check_complete(protocol, {"Req": 3, "Page": 4}, proved=prove(protocol))
    assert again.method == "proof" and again.conjuncts == result.conjuncts


def test_a_failed_proof_falls_through_to_a_replayed_counterexample() -> None:
    # Without bounded_transfer the strengthening no longer proves it; the finite search
    # finds the shortest counterexample, which replays.
    variant = load_variant(FIXED)
    protocol = protocol_for(variant, None, ("bounded_transfer",))
    assert protocol.strengthening
    sizes = {"Req": 2, "Page": 2}
    result = check_complete(protocol, sizes, variant=FIXED)
    assert result.verdict == "violated" and result.method != "proof"
    assert result.trace is not None
    concrete = Concrete(Instance(protocol, sizes))
    assert concrete.violated(replay(result.trace, concrete)[-1])
    assert result.to_json()["violated"] == result.trace.violated


@pytest.mark.parametrize("name", ["sglang-0.5.19-pd", "sglang-pd-deferred-timeout"])
def test_bmc_lemmas_change_no_verdict_and_no_length(name: str) -> None:
    # Asserting the invariants settled at earlier depths must not remove a counterexample
    # (every state of a longer trace at step k is reachable in k steps).
    protocol = protocol_for(load_variant(name))
    sizes = {"Req": 2, "Page": 3}
    fast = bmc(protocol, sizes, 9, variant=name)
    plain = bmc(protocol, sizes, 9, variant=name, lemmas=False)

    def shape(result):  # type: ignore[no-untyped-def]
        return [(r.invariant, r.holds, r.depth, r.shortest, r.primary) for r in result.results]

    assert shape(fast) == shape(plain)
    assert not fast.holds  # both buggy: the comparison covers counterexamples
