"""The handoff's liveness properties, by name (issue #29; prose in ``handoff.md``).

A variant's ``[expect]`` table takes one key per property (``answered = "holds"``), next to
the safety invariants; ``Variant.expect_liveness`` keeps them apart, so a design that is
safe but not live (the quarantine) is not a buggy variant.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LivenessInfo:
    name: str
    statement: str


_ALL = (
    LivenessInfo("answered", "every request that arrived eventually gets a response"),
    LivenessInfo(
        "pages_return",
        "every decode page of a request decode has ended eventually returns to the free pool",
    ),
    LivenessInfo(
        "no_starvation", "every request admitted to decode's queue is eventually scheduled"
    ),
)

LIVENESS: dict[str, LivenessInfo] = {p.name: p for p in _ALL}
