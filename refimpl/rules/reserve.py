"""``alloc(r, page)`` (E2) and ``send(r)`` (E3): decode preallocates, then hands prefill
the page indices (SGLang's ``PreallocQueue`` and the bootstrap handshake)."""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def can_alloc(ctx: Context, f: Flight, ev: Event) -> bool:
    d = f.d
    return (
        d.phase == "queued"
        and len(d.table) < d.reserve
        and ev.page is not None
        and ctx.decode.alloc.is_free(ev.page)
    )


def do_alloc(ctx: Context, f: Flight, ev: Event) -> None:
    assert ev.page is not None
    ctx.decode.alloc_page(f.d, ev.page)


def head_ready(ctx: Context, f: Flight) -> bool:
    """``send``'s extra guard with decode's radix cache: a hit has locked its head page
    (decode sends ``decode_prefix_len`` with the page indices)."""
    return ctx.sw.radix_cache == "off" or not f.d.hit_pages or bool(f.d.shared)


def can_send(ctx: Context, f: Flight, ev: Event) -> bool:
    d = f.d
    ready = (ctx.push or ctx.prefill.can_compute(f.p)) and head_ready(ctx, f)
    return d.phase == "queued" and len(d.table) == d.reserve and ready


def do_send(ctx: Context, f: Flight, ev: Event) -> None:
    p, d = f.p, f.d
    d.phase = "transfer"
    f.req.poll = "transferring"
    p.dst = list(d.table)  # P's copy: never updated when D frees and reallocates
    p.tag = ctx.decode.tags.tag_of(f.rid)  # the reservation's owner tag, with the indices
    if p.phase == "waiting":
        p.phase = "active"
        retire = ctx.sw.prefill_reject == "retire_after_forward" and not ctx.sw.honor_pending_reject
        if retire and f.req.over_p:
            # SGLang 0.5.20 process_batch_result_disagg_prefill: the stub's forward sees its
            # to_finish and _retire_aborted_prefill_result aborts the sender: nothing is
            # written or reported, decode waits on its transfer.
            p.phase = "stopped"
    if not ctx.push:
        ctx.compute(p)


ALLOC = Rule("alloc", can_alloc, do_alloc)
SEND = Rule("send", can_send, do_send)
