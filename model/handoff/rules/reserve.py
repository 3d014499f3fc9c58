"""``alloc(r, p)`` (E2) and ``send(r)`` (E3): decode preallocates its pages, then sends
their indices; the transfer starts."""

from __future__ import annotations

import kvproof.model.handoff.radix as radix
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def alloc(sw: Switches, s: Ctx, r: Term, p: Term) -> None:
    s.require(s.eq(s.dphase(r), "queued"))
    s.require(s.forall("Req", lambda x: s.not_(s.owns(x, p))))
    if radix.radix_on(sw):
        s.require(radix.allocatable(s, sw, p))
    s.set("owns", (r, p), True)
    s.set("filled", (p,), False)  # a fresh allocation; the bytes are not cleared
    s.set("at_pos", (p,), False)  # nothing of the new owner's is in it yet


def send(sw: Switches, s: Ctx, r: Term) -> None:
    s.require(s.eq(s.dphase(r), "queued"))
    s.require(s.exists("Page", lambda p: s.owns(r, p)))
    if radix.radix_on(sw):
        s.require(radix.head_ready(s, r))
    s.set("dphase", (r,), "transfer")
    s.set("poll", (r,), "transferring")
    s.update("dst", lambda x, q, old: s.ite(s.eq(x, r), s.owns(r, q), old))
    waiting = s.eq(s.pphase(r), "waiting")
    active: Term = "active"
    if sw.prefill_reject == "retire_after_forward" and not sw.honor_pending_reject:
        # 0.5.20: the over-long prompt's stub runs its forward once bootstrapped, and
        # process_batch_result_disagg_prefill retires it (_retire_aborted_prefill_result):
        # prefill stops, writes nothing and tells decode nothing.
        active = s.ite(s.over_p(r), "stopped", "active")
    s.set("pphase", (r,), s.ite(waiting, active, s.pphase(r)))
