"""The handoff's liveness properties, by name (issue #29; prose in ``handoff.md``).

A variant's ``[expect]`` table takes one key per property (``answered = "holds"``), next to
the safety invariants; ``Variant.expect_liveness`` keeps them apart, so a design that is
safe but not live (the quarantine) is not a buggy variant.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvproof.spec.errors import KvproofInputError


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


def split_expect(
    expect: Mapping[str, Any], path: Path, verdicts: tuple[str, ...]
) -> tuple[dict[str, Any], dict[str, str]]:
    """An ``[expect]`` table: (the safety keys, the liveness keys, each value checked).

    A liveness key names one of the handoff's properties (a user protocol built on it has
    them too); a user protocol's own liveness names are not known before its factory runs,
    so its variants do not list them."""
    safety = {k: v for k, v in expect.items() if k not in LIVENESS}
    lively = {k: v for k, v in expect.items() if k in LIVENESS}
    for prop, verdict in lively.items():
        if verdict not in verdicts:
            raise KvproofInputError(
                f"'expect.{prop}' must be 'holds' or 'violated', got {verdict!r}", str(path)
            )
    return safety, lively
