"""``ack(r)`` (E14), ``timeout(r)`` (E15), ``give_up(r)`` (E17): decode releases a request
it held (deferred release), or stops waiting for its KV."""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def can_ack(ctx: Context, f: Flight, ev: Event) -> bool:
    # abort_ack = before_drain: NIXL ACKs a cleared room early (#35360 review).
    drained = f.d.phase == "draining" and (
        ctx.sw.abort_ack == "before_drain" or not ctx.inflight(f)
    )
    # push: every prefill rank ACKs the drain, and a dead one sends nothing (crash, E20)
    if not ctx.push:
        return drained
    if not ctx.sw.abort_notifies_prefill:  # vLLM: finished_recving once P's WRITEs ended
        return drained and f.p.phase == "sent" and not f.p.dead
    return drained and f.p.phase not in ("waiting", "active") and not f.p.dead


def do_ack(ctx: Context, f: Flight, ev: Event) -> None:
    ctx.free_decode(f)  # SGLang #38961: every prefill rank ACKed the drain


def can_timeout(ctx: Context, f: Flight, ev: Event) -> bool:
    # SGLang's deferred-release timeout (30 s) frees without the ACK.
    return ctx.sw.release == "deferred_timeout" and f.d.phase == "draining"


def do_timeout(ctx: Context, f: Flight, ev: Event) -> None:
    ctx.free_decode(f)


def can_give_up(ctx: Context, f: Flight, ev: Event) -> bool:
    # waiting timeout (SGLANG_DISAGGREGATION_WAITING_TIMEOUT) or heartbeat-declared
    # death: no ABORT is sent, so prefill may go on writing.
    return ctx.sw.decode_gives_up != "never" and f.d.phase == "transfer"


def do_give_up(ctx: Context, f: Flight, ev: Event) -> None:
    req = f.req
    req.poll = "failed"
    req.reason = "decode gave up waiting for the KV (no ABORT sent to prefill)"
    if req.resp == "none":
        req.resp = "error"
    if ctx.sw.decode_gives_up == "free_at_once":
        ctx.free_decode(f)
    else:  # held like a deferred abort: freed on ACK or the release timeout
        f.d.phase = "draining"


ACK = Rule("ack", can_ack, do_ack)
TIMEOUT = Rule("timeout", can_timeout, do_timeout)
GIVE_UP = Rule("give_up", can_give_up, do_give_up)
