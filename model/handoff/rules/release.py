"""``ack(r)`` (E14), ``timeout(r)`` (E15), ``give_up(r)`` (E17): decode releases a request
it held (deferred release), or stops waiting for its KV."""

from __future__ import annotations

from kvproof.model.handoff.rules.guards import alive, free_pages_of, no_inflight
from kvproof.model.lang.context import Ctx, Term
from kvproof.spec.variant import Switches


def ack(sw: Switches, s: Ctx, r: Term, *, death: bool = False) -> None:
    # Deferred release (#38961): every prefill rank ACKs that its writes drained.
    push = sw.transfer_mode == "push"
    s.require(s.eq(s.dphase(r), "draining"))
    if push:  # pull: the drain is decode's own reads, no prefill message
        s.require(alive(s, r, death))  # a dead prefill sends no ACK
    if sw.abort_ack == "after_drain":  # before_drain: #35360 review, #38961 points 1-3
        s.require(no_inflight(s, r))
    if push and sw.abort_notifies_prefill:
        s.require(s.not_(s.isin(s.pphase(r), "waiting", "active")))
    elif push:  # vLLM: only prefill's completed writes free it (finished_recving)
        s.require(s.eq(s.pphase(r), "sent"))
    s.set("dphase", (r,), "done")
    free_pages_of(sw, s, r)


def timeout(sw: Switches, s: Ctx, r: Term) -> None:
    s.require(sw.release == "deferred_timeout")  # frees without the ACK
    s.require(s.eq(s.dphase(r), "draining"))
    s.set("dphase", (r,), "done")
    free_pages_of(sw, s, r)


def give_up(sw: Switches, s: Ctx, r: Term) -> None:
    # Issue 12 (variants): SGLang SGLANG_DISAGGREGATION_WAITING_TIMEOUT (300 s) or
    # heartbeats declaring the prefill dead: decode marks the request failed locally and
    # sends no ABORT, so prefill (alive, or slow) may go on writing.
    s.require(s.eq(s.dphase(r), "transfer"))
    free_now = sw.decode_gives_up == "free_at_once"
    s.set("dphase", (r,), "done" if free_now else "draining")
    if free_now:
        free_pages_of(sw, s, r)
    s.set("poll", (r,), "failed")
    s.set("resp", (r,), s.ite(s.eq(s.resp(r), "none"), "error", s.resp(r)))
