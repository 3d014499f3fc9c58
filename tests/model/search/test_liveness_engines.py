"""The two liveness engines cross-check each other on every catalog variant (issue #29):
the explicit-state fair-SCC search (complete at the size) and Z3's loop-back BMC agree on
every property, and every BMC lasso replays with its loop coming back."""

from __future__ import annotations

import pytest
from bmc_lasso_oracle import bmc_lassos

from kvproof.checker.verify.liveness import LIVENESS_SIZES
from kvproof.checker.verify.protocols import protocol_for
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import replay
from kvproof.model.search.lasso import find_lassos
from kvproof.spec.variant import list_variants


@pytest.mark.slow
@pytest.mark.parametrize("variant", list_variants(), ids=lambda v: v.name)
def test_explicit_and_bmc_agree(variant) -> None:  # type: ignore[no-untyped-def]
    protocol = protocol_for(variant, liveness=True)
    explicit = find_lassos(protocol, LIVENESS_SIZES, variant=variant.name)
    # BMC's shortest lasso is never longer than the explicit one (shortest stem, some loop),
    # so this depth reaches every lasso explicit found; 6 steps otherwise.
    depth = max((len(r.trace) for r in explicit.results if r.trace), default=6)
    bmc = bmc_lassos(protocol, LIVENESS_SIZES, depth, variant=variant.name)
    assert [r.holds for r in bmc.results] == [r.holds for r in explicit.results]
    concrete = Concrete(Instance(protocol, LIVENESS_SIZES))
    for r in bmc.results:
        if r.trace is None:
            continue
        assert r.trace.loop is not None and r.trace.meta["source"] == "bmc"
        states = replay(r.trace, concrete)
        assert states[r.trace.loop] == states[-1]
        assert len(r.trace) <= len(explicit.result(r.property).trace)  # type: ignore[arg-type]
