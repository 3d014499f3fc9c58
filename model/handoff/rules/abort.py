"""``p_abort(r)`` (E6), ``abort(r)`` (E12), ``abort_seen(r)`` (E13): an abort reaches
prefill on its own, or decode aborts and tells prefill, which stops sending when it sees
the ABORT."""

from __future__ import annotations

from kvproof.model.handoff.rules.guards import alive, free_pages_of
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def p_abort(sw: Switches, s: Ctx, r: Term, *, death: bool = False) -> None:
    # An abort reaches prefill mid-transfer (timeout, client abort): #36612, #33507.
    s.require(s.isin(s.pphase(r), "waiting", "active"))
    s.require(s.not_(s.pend(r)))
    s.require(alive(s, r, death))
    s.set("pend", (r,), True)


def abort(sw: Switches, s: Ctx, r: Term) -> None:
    s.require(s.isin(s.dphase(r), "queued", "transfer", "running"))
    # Before send prefill has no page indices; once running every write has landed.
    safe_now = s.isin(s.dphase(r), "queued", "running")
    if sw.release == "immediate":  # #24527/#35049: freed while writes are in flight
        free_now: Term = True
    elif sw.failed_means_drained:  # Mooncake: FAILED does not mean drained
        free_now = s.or_(safe_now, s.eq(s.poll(r), "failed"))
    else:
        free_now = safe_now
    s.set("dphase", (r,), s.ite(free_now, "done", "draining"))
    free_pages_of(sw, s, r, free_now)
    s.set("poll", (r,), "failed")
    s.set("abort_msg", (r,), True)
    s.set("resp", (r,), s.ite(s.eq(s.resp(r), "none"), "aborted", s.resp(r)))


def abort_seen(sw: Switches, s: Ctx, r: Term, *, death: bool = False) -> None:
    s.require(s.abort_msg(r))
    s.require(s.isin(s.pphase(r), "waiting", "active"))
    s.require(alive(s, r, death))
    s.set("pphase", (r,), "stopped")
