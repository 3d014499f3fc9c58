"""``crash(r)`` (E20): the prefill serving ``r`` dies (liveness only, issue #29).

The protocol has it only when built with ``peer_death`` (``model/handoff/liveness.py``
says why liveness needs it); then ``guards.alive`` guards every prefill step.
"""

from __future__ import annotations

from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def crash(sw: Switches, s: Ctx, r: Term) -> None:
    """The prefill serving ``r`` dies while it still has work for ``r``. A later SGLang
    UniFlow backend design note: if the shutdown after a failed put raises, prefill sends
    neither Failed nor ABORT_ACK (``guards.alive`` guards its steps)."""
    s.require(s.not_(s.p_dead(r)))
    s.require(s.isin(s.pphase(r), "waiting", "active"))
    s.set("p_dead", (r,), True)
