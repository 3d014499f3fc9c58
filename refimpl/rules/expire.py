"""``expire(r)`` (E16): prefill's source blocks go back before the transfer is over."""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def can_expire(ctx: Context, f: Flight, ev: Event) -> bool:
    sw, p = ctx.sw, f.p
    if ctx.push:  # dynamo #826: P frees its sources between two writes
        early = sw.prefill_hold == "early_free" and p.phase == "active"
        return early and p.src_ok and not ctx.inflight(f)
    return sw.prefill_hold == "lease" and p.src_ok


def do_expire(ctx: Context, f: Flight, ev: Event) -> None:
    f.p.src_ok = False  # vLLM #52234: the blocks go back to P and other traffic reuses them
    ctx.prefill.release(f.p, reused=True)


EXPIRE = Rule("expire", can_expire, do_expire)
