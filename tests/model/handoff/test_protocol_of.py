"""``protocol_of``: the one way from a variant to its protocol, assumed or as written."""

from __future__ import annotations

import pytest

from kvproof.model.handoff import build_handoff, protocol_of
from kvproof.spec.variant import load_variant

V22 = load_variant("sglang-0.5.22-pd")


def _names(protocol):  # type: ignore[no-untyped-def]
    return [a.name for a in protocol.actions]


def test_as_written_is_build_handoff_of_the_switches() -> None:
    for liveness in (False, True):
        raw = protocol_of(V22, assumed=False, liveness=liveness)
        plain = build_handoff(V22.switches, peer_death=liveness)
        assert _names(raw) == _names(plain) and raw.assumptions == plain.assumptions == ()
        assert ("crash" in _names(raw)) is liveness


def test_assumed_is_under_the_variants_assume() -> None:
    assert protocol_of(V22).assumptions == tuple(V22.assume)
    assert protocol_of(V22, without=("bounded_transfer",)).assumptions == (
        "transfer_eventually_ends",
    )


def test_without_needs_assumptions_to_drop() -> None:
    with pytest.raises(ValueError, match="assumed=True"):
        protocol_of(V22, assumed=False, without=("bounded_transfer",))
