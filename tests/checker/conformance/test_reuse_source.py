"""Other traffic reuses only prefill blocks that are free (``canaries.reuse_source``).

A 10,000-walk campaign on vllm-nixl-fixed (issue 30) reported a leak that the harness had
planted: r0's transfer fails and prefill gives its blocks back at once; r1 allocates the
same blocks; r0's lease then expires, and the reuse canary was written over every block r0
had once held, r1's live KV among them. r1 got 200 with the canary. The engine's own
release frees nothing twice; the fix writes only blocks the allocator holds free.
"""

from __future__ import annotations

from kvproof.checker.conformance.replay import replay_trace
from kvproof.model.lang.instance import ActionInstance
from kvproof.model.lang.trace import Trace
from kvproof.spec.variant import load_variant

STEPS = [
    ("arrive", 0), ("alloc", 0, 0), ("send", 0), ("fail", 0),
    ("arrive", 1), ("alloc", 1, 1), ("send", 1), ("post", 1, 1),
    ("abort", 0), ("expire", 0), ("land", 1, 1), ("done", 1), ("commit", 1),
]  # fmt: skip
INIT = {
    "over_p": {(0,): False, (1,): False},
    "over_d": {(0,): False, (1,): False},
}


def test_an_expired_lease_reuses_no_block_another_request_holds() -> None:
    steps = tuple(ActionInstance(s[0], tuple(s[1:])) for s in STEPS)
    trace = Trace("vllm-nixl-fixed", {"Req": 2, "Page": 3}, INIT, steps, None, {"reserve": [1, 1]})
    report = replay_trace(trace, load_variant("vllm-nixl-fixed"))
    assert report.divergence is None and report.crash is None
    assert report.steps_applied == len(STEPS)
    assert report.shows == "nothing", [r.text for r in report.responses]
    assert report.exit_code == 0
