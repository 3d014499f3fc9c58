"""``arrive(r)`` (E1): the router sends the request; each side validates it on its own."""

from __future__ import annotations

from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def arrive(sw: Switches, s: Ctx, r: Term) -> None:
    s.require(s.eq(s.dphase(r), "idle"))
    # Each side validates independently; with honor_pending_reject a prefill reject is
    # retired at the admission queue on both sides with its 400 (#38935, #38704). Decode
    # retires its own reject at its door, or queues its 1-token stub (decode_admission).
    own = s.over_d(r) if sw.decode_admission == "retire_reject" else False
    rej = s.or_(own, s.over_p(r) if sw.honor_pending_reject else False)
    s.set("dphase", (r,), s.ite(rej, "done", "queued"))
    s.set("pphase", (r,), s.ite(rej, "stopped", "waiting"))
    s.set("resp", (r,), s.ite(rej, "rejected", "none"))
    s.set("pend", (r,), False if sw.honor_pending_reject else s.and_(s.over_p(r), s.not_(rej)))
    s.set("src_ok", (r,), s.not_(rej))
