"""The engine's mirror of ``decode_admission`` (``refimpl/rules/arrive.py``): a prompt over
decode's own limit is retired at arrival (SGLang 0.5.21+), or queued as decode's 1-token stub
(0.5.15-0.5.20), whose one page decode reserves and receives before its 400."""

from __future__ import annotations

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.spec.variant import Sizes, load_variant


@pytest.mark.parametrize(
    ("variant", "stub"), [("sglang-0.5.19-pd", True), ("sglang-0.5.22-pd", False)]
)
def test_the_engine_mirrors_decode_s_admission(small: Sizes, variant: str, stub: bool) -> None:
    c = Cluster(load_variant(variant), sizes=small, seed=0)
    n = c.decode.limits.max_req_input_len + 1  # over decode's own limit
    rid = c.submit("t", [7] * n, 4)
    c.run()
    flight = c.handoff.flights[rid]
    assert c.response(rid).status == 400 and flight.d.phase == "done" and not flight.d.table
    # queue_reject: decode reserved the stub's one page and took its transfer first.
    assert (flight.d.reserve == 1 and flight.d.aux is not None) == stub
