"""``insert(r, page)`` (E18) and ``share(r, page)`` (E19): decode's radix cache.

SGLang's decode (``--disaggregation-decode-enable-radix-cache``, #19746) inserts a running
request's pages into its radix tree; a later request whose prompt opens with the same head
locks the mapped page (``inc_lock_ref``) and reads it instead of receiving it. The tree
itself is ``refimpl/radix.py``; who owns a mapped page is the variant's ``radix_cache``.
"""

from __future__ import annotations

from kvproof.refimpl.events import Event
from kvproof.refimpl.flight import Flight
from kvproof.refimpl.radix import TREE
from kvproof.refimpl.rules.context import Context, Rule


def head(ctx: Context, f: Flight) -> tuple[int, ...]:
    """The tokens of the request's first chunk (the tree's key)."""
    return tuple(f.req.prompt[: ctx.decode.page_size])


def can_insert(ctx: Context, f: Flight, ev: Event) -> bool:
    # a running request without a hit, one of its pages the tree does not map yet
    page, d = ev.page, f.d
    if ctx.sw.radix_cache == "off" or page is None:
        return False
    return (
        d.phase == "running"
        and not d.hit_pages
        and page in d.table
        and page not in d.handed
        and page not in ctx.decode.tree.key
    )


def do_insert(ctx: Context, f: Flight, ev: Event) -> None:
    page, d, tree = ev.page, f.d, ctx.decode.tree
    assert page is not None
    ps, chunk = ctx.decode.page_size, d.table.index(page)  # no hit: chunk = index
    tree.insert(page, f.req.prompt[chunk * ps : (chunk + 1) * ps])
    ctx.decode.record.inserted(page, f.rid)
    if ctx.sw.radix_cache == "refcounted":  # #38355: the tree owns what it maps
        d.handed.add(page)  # still read in place; its release no longer frees it
        tree.lock(page, f.rid)
        ctx.decode.alloc.owner[page] = TREE
    # free_while_cached (#38319): the page stays the request's; release frees it


def can_share(ctx: Context, f: Flight, ev: Event) -> bool:
    # a queued hit locks a mapped page whose tokens are its head
    page, d = ev.page, f.d
    if ctx.sw.radix_cache == "off" or page is None:
        return False
    return (d.phase == "queued" and d.hit_pages > 0 and not d.shared) and ctx.decode.tree.matches(
        page, head(ctx, f)
    )


def do_share(ctx: Context, f: Flight, ev: Event) -> None:
    assert ev.page is not None
    f.d.shared.append(ev.page)
    ctx.decode.tree.lock(ev.page, f.rid)  # inc_lock_ref


INSERT = Rule("insert", can_insert, do_insert)
SHARE = Rule("share", can_share, do_share)
