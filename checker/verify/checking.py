"""The protocol a variant is checked on: kvproof's handoff or a user's, under its assumptions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kvproof.model.handoff import protocol_of
from kvproof.model.handoff.assumptions import active, apply
from kvproof.model.lang.dsl import Protocol
from kvproof.spec.variant import Variant

ProtocolFactory = Callable[[Any], Protocol]


def protocol_for(
    variant: Variant,
    factory: ProtocolFactory | None = None,
    without: tuple[str, ...] = (),
    *,
    liveness: bool = False,
) -> Protocol:
    """The protocol a variant's switches configure: kvproof's handoff unless ``factory``,
    under the variant's assumptions less ``without``. A user protocol gets the guards of
    kvproof's assumptions on the actions it shares with kvproof's handoff, and the
    fairness of its fairness assumptions. ``liveness``: kvproof's handoff with a peer that
    may die unless the variant assumes ``prefill_eventually_reports`` (``protocol_of``)."""
    if factory is None:
        return protocol_of(variant, without=without, liveness=liveness)
    names = active(variant, without)
    protocol = factory(variant.switches)
    return apply(protocol, names, variant.switches, str(variant.path)) if names else protocol
