"""The engine's mirror of ``prefill_reject`` (``refimpl/rules/reserve.py::do_send``): an
over-long prompt's stub is sent and answered 200 (sglang-0.5.19-pd, the incident), or
retired by prefill after its forward with nothing sent (sglang-0.5.20-pd): no 200, and
decode never receives a status for it."""

from __future__ import annotations

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.spec.variant import load_variant


@pytest.mark.parametrize(
    ("variant", "retired"), [("sglang-0.5.19-pd", False), ("sglang-0.5.20-pd", True)]
)
def test_the_engine_mirrors_prefill_s_reject(variant: str, retired: bool) -> None:
    v = load_variant(variant)
    c = Cluster(v, sizes=v.engine_sizes, seed=0)
    n = c.prefill.limits.max_req_input_len + 1  # over prefill's limit, within decode's
    assert n <= c.decode.limits.max_req_input_len
    rid = c.submit("t", [7] * n, 4)
    c.run()
    f = c.handoff.flights[rid]
    assert (c.response(rid).status == 200) is not retired
    assert (f.p.phase == "stopped" and not f.p.posted and f.d.aux is None) is retired
    assert not f.d.table  # freed either way, once answered
