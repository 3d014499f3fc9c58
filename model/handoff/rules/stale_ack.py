"""``stale_ack(r)`` (E21): a late ABORT_ACK of an earlier abort of r's room reaches decode.

A bootstrap room can be reused by a later request while the ACK of an earlier abort of
it is still on the wire, and the network may deliver an ACK late or twice. Such an ACK
says nothing about r's writes: every prefill rank of the earlier abort ACKs, and r's own
may still be writing. The fault is enabled once decode has published r's room (from
``send``) until decode lets it go; only where decode counts prefill's ABORT_ACKs (push,
an abort that reaches prefill: ``protocol.present``).

``ack_generation`` (``spec/switches.py``) says what decode does with it:

- ``checked`` (SGLang 0.5.22+): the ACK carries the generation of the ABORT it answers
  and ``common/conn.py::CommonKVManager.note_abort_ack`` records it only for the
  generation now holding the room: nothing changes.
- ``unchecked`` (0.5.19-0.5.21): ``note_abort_ack(bootstrap_room, prefill_rank)`` records
  any ACK while the room is held (arming wipes earlier ones, a later one counts): a held
  request is freed as on its own ACK, with or without writes in flight.
"""

from __future__ import annotations

from kvproof.model.handoff.rules.guards import free_pages_of
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def stale_ack(sw: Switches, s: Ctx, r: Term) -> None:
    s.require(s.isin(s.dphase(r), "transfer", "draining"))
    if sw.ack_generation == "unchecked":
        held = s.eq(s.dphase(r), "draining")
        s.set("dphase", (r,), s.ite(held, "done", s.dphase(r)))
        free_pages_of(sw, s, r, held)
