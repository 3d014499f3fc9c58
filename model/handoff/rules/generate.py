"""``commit(r)`` (E9), ``step(r)`` (E10), ``finish(r)`` (E11): decode checks what arrived,
then reads it, step by step, until generation ends and frees the pages."""

from __future__ import annotations

from kvproof.model.handoff.rules.guards import bad, decode_stub, foreign, free_pages_of, short
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def commit(sw: Switches, s: Ctx, r: Term) -> None:
    s.require(s.eq(s.dphase(r), "transfer"))
    s.require(s.eq(s.poll(r), "success"))
    b = bad(sw, s, r)
    f = foreign(s, r)
    reject = s.or_(
        short(sw, s, r) if sw.written_length_check else False,
        # #39500: Adler-32 over the pages. Decode skips the comparison when the value it
        # received is 0: enabled on one role only, it checks nothing.
        f if sw.transfer_checksum == "both" else False,
        f if sw.page_tags else False,  # owner tags checked before the first read
    )
    # A queued stub (decode_admission) ends at its first step with its 400, its pages
    # freed (Req.update_finish_state moves the pending reject): folded into the commit.
    stub = decode_stub(sw, s, r)
    ends = s.or_(reject, stub) if sw.decode_admission == "queue_reject" else reject
    s.set("dphase", (r,), s.ite(ends, "done", "running"))
    s.set("resp", (r,), s.ite(reject, "error", s.ite(stub, "rejected", "ok")))
    s.set("leaked", (r,), s.or_(s.leaked(r), s.and_(s.not_(reject), b)))
    free_pages_of(sw, s, r, ends)


def step(sw: Switches, s: Ctx, r: Term) -> None:
    s.require(s.eq(s.dphase(r), "running"))
    b = bad(sw, s, r)
    if sw.page_tags:  # a foreign tag fails the request instead of being read
        f = foreign(s, r)
        s.set("dphase", (r,), s.ite(f, "done", "running"))
        s.set("resp", (r,), s.ite(f, "error", s.resp(r)))
        s.set("leaked", (r,), s.or_(s.leaked(r), s.and_(s.not_(f), b)))
        free_pages_of(sw, s, r, f)
    else:
        s.set("leaked", (r,), s.or_(s.leaked(r), b))


def finish(sw: Switches, s: Ctx, r: Term) -> None:
    s.require(s.eq(s.dphase(r), "running"))
    s.set("dphase", (r,), "done")
    free_pages_of(sw, s, r)
