"""``post(r, p)`` (E4) and ``land(r, p)`` (E5): the sender's writes, and their landing.

Push: prefill posts writes into decode's pages. Pull: decode reads prefill's blocks until
it concludes the transfer. A posted write cannot be cancelled (``inflight``).
"""

from __future__ import annotations

import kvproof.model.handoff.radix as radix
from kvproof.model.handoff.rules.guards import alive, in_place, placeholder
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def post(sw: Switches, s: Ctx, r: Term, p: Term, *, death: bool = False) -> None:
    if sw.transfer_mode == "push":
        s.require(s.eq(s.pphase(r), "active"))
        s.require(alive(s, r, death))
    else:  # pull: decode reads prefill's blocks until it concludes the transfer
        s.require(s.eq(s.dphase(r), "transfer"))
        s.require(s.eq(s.poll(r), "transferring"))
    s.require(s.dst(r, p))
    s.require(s.not_(s.posted(r, p)))
    if sw.decode_reserve == "plus_one":
        # The sender has one page fewer than decode reserved: some page stays unwritten.
        s.require(
            s.exists(
                "Page",
                lambda q: s.and_(s.ne(q, p), s.dst(r, q), s.not_(s.posted(r, q))),
            )
        )
    s.require(s.implies(placeholder(sw, s, r), s.forall("Page", lambda q: s.not_(s.posted(r, q)))))
    s.set("posted", (r, p), True)
    s.set("inflight", (r, p), True)


def land(sw: Switches, s: Ctx, r: Term, p: Term) -> None:
    s.require(s.inflight(r, p))
    s.set("inflight", (r, p), False)
    # Pull mode: after a lease expiry prefill's block holds someone else's KV (#52234).
    s.update(
        "holds",
        lambda q, x, old: s.ite(s.eq(q, p), s.and_(s.eq(x, r), s.src_ok(r)), old),
    )
    s.set("filled", (p,), True)
    s.set("at_pos", (p,), in_place(sw, s, r))
    s.set("stray", (p,), s.or_(s.stray(p), s.not_(s.owns(r, p))))
    if radix.radix_on(sw):
        radix.landed(s, p)
