"""``protocol_of(variant)``: the one way from a variant to the protocol a command checks.

Every caller wants one of two protocols: the handoff under the variant's assumptions (what
``check``, ``prove``, ``fuzz`` and the walks judge), or the handoff exactly as
``protocol.py`` writes it for the variant's switches (``assumed=False``: what the engine
is replayed against, what a trace file is read with). ``liveness`` adds a prefill that
may die (``crash``) unless an active assumption says it always reports.

    protocol = protocol_of(load_variant("sglang-0.5.22-pd"))  # under bounded_transfer
    protocol = protocol_of(variant, without=("bounded_transfer",))  # the 30 s stall leaks
    protocol = protocol_of(variant, assumed=False)  # the switches alone
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from kvproof.model.handoff.assumptions import active, apply
from kvproof.model.handoff.protocol import build_handoff
from kvproof.model.handoff.strengthening import strengthening
from kvproof.model.lang.dsl import Protocol
from kvproof.spec.variant import Variant


def protocol_of(
    variant: Variant,
    *,
    assumed: bool = True,
    without: Iterable[str] = (),
    liveness: bool = False,
) -> Protocol:
    """kvproof's handoff as ``variant`` configures it. ``assumed``: under the variant's
    assumptions less ``without`` (each of which it must list), with the strengthening for
    that environment; otherwise as written (``without`` is then meaningless and must be
    empty). ``liveness``: the protocol liveness checks run, with ``crash`` unless the
    active assumptions include ``prefill_eventually_reports``."""
    dropped = tuple(without)
    if not assumed:
        if dropped:
            raise ValueError("without= drops assumptions: it needs assumed=True")
        return build_handoff(variant.switches, peer_death=liveness)
    names = active(variant, dropped)
    sw = variant.switches
    death = liveness and "prefill_eventually_reports" not in names
    protocol = apply(build_handoff(sw, peer_death=death), names, sw, str(variant.path))
    return dataclasses.replace(protocol, strengthening=strengthening(sw, frozenset(names)))
