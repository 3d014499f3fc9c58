"""Decode's radix cache in the handoff: read-only prefix pages shared with reference counts.

Issue 12 items 3-4. SGLang's decode (``--disaggregation-decode-enable-radix-cache``, #19746)
matches a new request against its radix tree and locks the matched node
(``DecodePreallocQueue._match_prefix_and_lock``: ``inc_lock_ref``): the request reads the
tree's pages as its prompt's head and receives only the rest from prefill. A finished
request's pages are inserted into the tree; eviction takes only unlocked nodes (not
modelled: a tree that never evicts only leaves fewer pages free).

``one_owner`` cannot describe a page several requests read, so the vocabulary grows:

- ``cached(p)``: the tree maps a prompt head to page ``p``;
- ``shares(r, p)``: ``r`` holds a lock on ``p`` and reads it as its head (the readers of a
  page are its reference count);
- ``prefix_ok(p)``: ``p`` still holds the KV it was inserted with (its inserter's own
  fresh KV, at its position);
- ghost ``shared_write(p)``: a transfer wrote the page while the tree mapped it.

A head is one page here (every prompt of an instance opens with the same system-prompt
page). A request without a hit inserts its pages one by one; the model lets a hit lock any
cached page, the engine only one whose tokens are its head (the tree is keyed by tokens):
the model allows more sharing than the engine does, never less. The events, ``insert``
and ``share``, are ``rules/radix.py``.

The race (#38319, fix proposed in #38355): a request's pages are inserted into the tree
while the request still owns them, and the request's release (abort, retract:
``release_kv_cache`` -> ``cache_finished_req(is_insert=False)``) frees them back to the
pool though the tree still maps them. The allocator hands such a page to a new request,
whose transfer overwrites it, and every later request matching the prefix reads garbage.
"""

from __future__ import annotations

from typing import Any

from kvproof.model.lang.context import Ctx
from kvproof.model.lang.dsl import BOOL, Var
from kvproof.spec.variant import Switches

RADIX_VARS = (
    Var("cached", ("Page",), BOOL, doc="decode's radix tree maps a prompt head to the page"),
    Var("shares", ("Req", "Page"), BOOL, doc="the request locks the page and reads it as its head"),
    Var("prefix_ok", ("Page",), BOOL, doc="the page still holds the KV it was inserted with"),
    Var("shared_write", ("Page",), BOOL, ghost=True, doc="a transfer wrote a page the tree maps"),
)


def radix_on(sw: Switches) -> bool:
    return sw.radix_cache != "off"


def allocatable(s: Ctx, sw: Switches, p: Any) -> Any:
    """The allocator's extra condition: with reference counts a page the tree maps is not
    in the free list; ``free_while_cached`` put it back there when its inserter released."""
    return s.not_(s.cached(p)) if sw.radix_cache == "refcounted" else True


def release(s: Ctx, r: Any, when: Any) -> None:
    """``dec_lock_ref``: the request's locks go with its pages."""
    s.update("shares", lambda x, q, old: s.ite(s.and_(s.eq(x, r), when), False, old))


def bad_shared(s: Ctx, r: Any) -> Any:
    """``r`` reads a head page that no longer holds the KV the tree maps it to."""
    return s.exists("Page", lambda p: s.and_(s.shares(r, p), s.not_(s.prefix_ok(p))))


def landed(s: Ctx, p: Any) -> None:
    """A transfer's write lands in ``p``: if the tree maps it, the prefix is gone."""
    s.set("prefix_ok", (p,), s.and_(s.prefix_ok(p), s.not_(s.cached(p))))
    s.set("shared_write", (p,), s.or_(s.shared_write(p), s.cached(p)))


def head_ready(s: Ctx, r: Any) -> Any:
    """``send``'s extra guard: a request whose head hit has locked its head page first
    (decode sends ``decode_prefix_len`` with the page indices)."""
    return s.implies(s.hit(r), s.exists("Page", lambda p: s.shares(r, p)))


def one_owner(s: Ctx, p: Any, shared: bool) -> Any:
    """Invariant 4 at page ``p``: at most one owner (the writer-owner of what a transfer
    writes); with a radix cache, also: a page the tree shares is never written."""

    def single(x: Any) -> Any:
        return s.forall("Req", lambda y: s.implies(s.and_(s.owns(x, p), s.owns(y, p)), s.eq(x, y)))

    alone = s.forall("Req", single)
    return s.and_(alone, s.not_(s.shared_write(p))) if shared else alone
