"""``expire(r)`` (E16): prefill's source blocks go back before the transfer is over."""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def can_expire(ctx: Context, f: Flight, ev: Event) -> bool:
    sw, p = ctx.sw, f.p
    if ctx.push and sw.prefill_hold == "early_free":  # dynamo #826: between two writes
        return p.phase == "active" and p.src_ok and not ctx.inflight(f)
    if ctx.push:  # vLLM NIXL push: the lease runs from request_finished to the WRITE's end
        lease = sw.prefill_hold == "lease" and p.phase in ("waiting", "active")
        return lease and p.src_ok
    return sw.prefill_hold == "lease" and p.src_ok


def do_expire(ctx: Context, f: Flight, ev: Event) -> None:
    p = f.p
    p.src_ok = False  # vLLM #52234: the blocks go back to P and other traffic reuses them
    ctx.prefill.release(p, reused=True)
    if ctx.push and ctx.sw.prefill_hold == "lease" and not p.posted:
        # vLLM push_worker.py::get_transfer_results: the expired request's unmatched
        # registration and blocks are dropped (_evict_finished_inbox): P never writes it
        # and never tells D. A WRITE already posted goes on and notifies D when it ends.
        p.phase = "stopped"


EXPIRE = Rule("expire", can_expire, do_expire)
