"""Decode's radix cache: prompt heads mapped to read-only pages, locked by reference counts.

SGLang's decode (``--disaggregation-decode-enable-radix-cache``, #19746) matches a request
against its radix tree and locks the matched node (``_match_prefix_and_lock``:
``inc_lock_ref``) so that eviction leaves it alone; the request reads those pages as its
prompt's head and prefill sends only the rest. A head is one page here, and the key is a
page's tokens: a hit locks a page holding its first chunk (every prompt of a run opens with
the same system-prompt page).

Who owns a mapped page is the variant's ``radix_cache``: ``refcounted`` hands it to the tree
(the request's release no longer frees it, #38355); ``free_while_cached`` leaves it in the
request's table, whose release frees it while the tree still maps it (#38319).
``RadixEvents`` is the engine's ``insert``/``share`` (guards and effects), mixed into
``Handoff``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kvproof.refimpl.events import Event

if TYPE_CHECKING:
    from kvproof.refimpl.handoff import Handoff

TREE = -1  # the allocator's owner of a page the tree holds (refcounted)


@dataclass
class RadixTree:
    key: dict[int, tuple[int, ...]] = field(default_factory=dict)  # page -> its tokens
    locks: dict[int, set[int]] = field(default_factory=dict)  # page -> readers (lock_ref)

    def insert(self, page: int, tokens: tuple[int, ...]) -> None:
        self.key[page] = tokens
        self.locks.setdefault(page, set())

    def matches(self, page: int, head: tuple[int, ...]) -> bool:
        return self.key.get(page) == head

    def lock(self, page: int, rid: int) -> None:
        self.locks[page].add(rid)

    def unlock(self, page: int, rid: int) -> None:
        self.locks.get(page, set()).discard(rid)


class RadixEvents:
    """``insert(r, page)`` and ``share(r, page)`` of ``spec/handoff.md`` (E18, E19)."""

    def head(self: Handoff, r: int) -> tuple[int, ...]:
        """The tokens of ``r``'s first chunk (the tree's key)."""
        return tuple(self.requests[r].prompt[: self.decode.page_size])

    def can_radix(self: Handoff, ev: Event) -> bool:
        r, page, d = ev.rid, ev.page, self.d[ev.rid]
        tree = self.decode.tree
        if self.sw.radix_cache == "off" or page is None:
            return False
        if ev.name == "insert":  # a running request without a hit, one of its pages
            return (
                d.phase == "running"
                and not d.hit_pages
                and page in d.table
                and page not in d.handed
                and page not in tree.key
            )

        # share: a queued hit locks a mapped page whose tokens are its head
        return (d.phase == "queued" and d.hit_pages > 0 and not d.shared) and tree.matches(
            page, self.head(r)
        )

    def head_ready(self: Handoff, r: int) -> bool:
        """``send``'s extra guard: a hit has locked its head page (decode sends
        ``decode_prefix_len`` with the page indices)."""
        return self.sw.radix_cache == "off" or not self.d[r].hit_pages or bool(self.d[r].shared)

    def landed_radix(self: Handoff, page: int) -> None:
        if page in self.decode.tree.key:  # a write lands in a page the tree maps
            self.decode.record.landed_shared(page)

    def _do_insert(self: Handoff, ev: Event) -> None:
        r, page, d = ev.rid, ev.page, self.d[ev.rid]
        assert page is not None
        ps, chunk = self.decode.page_size, d.table.index(page)  # no hit: chunk = index
        self.decode.tree.insert(page, self.requests[r].prompt[chunk * ps : (chunk + 1) * ps])
        self.decode.record.inserted(page, r)
        if self.sw.radix_cache == "refcounted":  # #38355: the tree owns what it maps
            d.handed.add(page)  # still read in place; its release no longer frees it
            self.decode.tree.lock(page, r)
            self.decode.alloc.owner[page] = TREE
        # free_while_cached (#38319): the page stays the request's; release frees it

    def _do_share(self: Handoff, ev: Event) -> None:
        assert ev.page is not None
        self.d[ev.rid].shared.append(ev.page)
        self.decode.tree.lock(ev.page, ev.rid)  # inc_lock_ref
