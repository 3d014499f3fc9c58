"""``stale_ack(r)`` (E21): a late ABORT_ACK of an earlier abort of r's room reaches decode
(a room reused while that ACK was on the wire, or the network late or duplicating).

Decode that checks the ACK's generation (SGLang 0.5.22+, ``ack_generation = checked``)
drops it; one that reads only the room and the rank (0.5.19-0.5.21) counts it while it
holds the room, and frees as on r's own ACK, writes in flight or not.
"""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def can_stale_ack(ctx: Context, f: Flight, ev: Event) -> bool:
    # Only decode that counts prefill's ABORT_ACKs (push, an abort that reaches prefill)
    # has a room an ACK can name: from send (the room published) until it lets it go.
    acks = ctx.push and ctx.sw.abort_notifies_prefill
    return acks and f.d.phase in ("transfer", "draining")


def do_stale_ack(ctx: Context, f: Flight, ev: Event) -> None:
    if ctx.sw.ack_generation == "unchecked" and f.d.phase == "draining":
        ctx.free_decode(f)  # counted as this abort's ACK from every rank


STALE_ACK = Rule("stale_ack", can_stale_ack, do_stale_ack)
