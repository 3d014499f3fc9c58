"""``post(r, page)`` (E4) and ``land(r, page)`` (E5): the sender's writes, and their landing.

Push (Mooncake-like): prefill posts RDMA writes into decode's pages. Pull (NIXL-like):
decode reads prefill's blocks. A posted write cannot be cancelled (``refimpl/transfer.py``).
"""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.rules.context import Context, Rule


def source_index(ctx: Context, f: Flight, index: int) -> int:
    """Prefill's block for the sender's ``index``-th destination. With a prefix hit
    decode has fewer blocks (num_local < num_remote): ``remote_trim = tail`` sends the
    blocks decode lacks (vLLM ``_apply_prefix_caching``: ``remote[-num_local:]``);
    ``head`` sends the first ones (NIXL push before #48758): the wrong chunks."""
    if ctx.sw.remote_trim == "tail":
        return index + f.d.hit_pages
    return index


def can_post(ctx: Context, f: Flight, ev: Event) -> bool:
    p = f.p
    if ctx.push:
        ok = p.phase == "active" and ctx.prefill.can_compute(p) and not p.dead
    else:  # pull: decode reads prefill's blocks until the transfer concluded
        # (success or failed): a NIXL read is never started after that.
        ok = f.d.phase == "transfer" and p.computed and f.req.poll == "transferring"
    return ok and ev.page in ctx.targets(f) and ev.page not in p.posted


def do_post(ctx: Context, f: Flight, ev: Event) -> None:
    p = f.p
    assert ev.page is not None
    ctx.compute(p)
    index = ctx.targets(f).index(ev.page)
    ctx.transfer.post(f.rid, ev.page, p.pages[source_index(ctx, f, index)], ctx.prefill.pool)
    p.posted.add(ev.page)
    # the chunk this write should carry (decode's table comes after the prefix cache's)
    f.meant[ev.page] = index + f.d.hit_pages


def can_land(ctx: Context, f: Flight, ev: Event) -> bool:
    return (f.rid, ev.page) in ctx.transfer.in_flight


def do_land(ctx: Context, f: Flight, ev: Event) -> None:
    page = ev.page
    assert page is not None
    t = ctx.transfer.land(f.rid, page, ctx.prefill.pool, ctx.decode)
    if page in ctx.decode.tree.key:  # a write lands in a page decode's radix tree maps
        ctx.decode.record.landed_shared(page)
    # issue 12 item 3: the chunk the write was meant to carry, for the recorder only
    meant, pages, ps = f.meant.pop(page), f.p.pages, ctx.decode.page_size
    wanted = max(0, min(ps, f.d.prompt_len - meant * ps))  # slots decode reads there
    ctx.decode.record.positioned(page, t.src in pages[meant : meant + 1], wanted)


POST = Rule("post", can_post, do_post)
LAND = Rule("land", can_land, do_land)
