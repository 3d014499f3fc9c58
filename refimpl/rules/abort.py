"""``p_abort(r)`` (E6), ``abort(r)`` (E12), ``abort_seen(r)`` (E13): an abort reaches prefill
on its own, or decode aborts and tells prefill, which stops sending when it processes it."""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def can_p_abort(ctx: Context, f: Flight, ev: Event) -> bool:
    # An abort reaches prefill mid-transfer (timeout, client abort): #36612, #33507.
    return ctx.push and f.p.phase in ("waiting", "active") and not f.p.pend and not f.p.dead


def do_p_abort(ctx: Context, f: Flight, ev: Event) -> None:
    f.p.pend = True
    f.req.reason = "aborted at prefill mid-transfer"


def can_abort(ctx: Context, f: Flight, ev: Event) -> bool:
    return f.d.phase in ("queued", "transfer", "running")


def do_abort(ctx: Context, f: Flight, ev: Event) -> None:
    sw, req, d = ctx.sw, f.req, f.d
    # Before send P has no indices; once running every write has landed.
    safe_now = d.phase in ("queued", "running")
    if sw.release == "immediate":  # #24527/#35049: freed while writes are in flight
        free_now = True
    elif sw.failed_means_drained:  # Mooncake: FAILED does not mean drained
        free_now = safe_now or req.poll == "failed"
    else:
        free_now = safe_now
    if not req.reason:
        req.reason = "client disconnected"
    req.poll = "failed"
    req.abort_msg = True
    if req.resp == "none":
        req.resp = "aborted"
    if free_now:
        ctx.free_decode(f)
    else:
        d.phase = "draining"


def can_abort_seen(ctx: Context, f: Flight, ev: Event) -> bool:
    # vLLM NIXL push (abort_notifies_prefill = false): decode sends prefill nothing.
    told = ctx.push and ctx.sw.abort_notifies_prefill and f.req.abort_msg
    return told and f.p.phase in ("waiting", "active") and not f.p.dead


def do_abort_seen(ctx: Context, f: Flight, ev: Event) -> None:
    f.p.phase = "stopped"


P_ABORT = Rule("p_abort", can_p_abort, do_p_abort)
ABORT = Rule("abort", can_abort, do_abort)
ABORT_SEEN = Rule("abort_seen", can_abort_seen, do_abort_seen)
