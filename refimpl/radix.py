"""Decode's radix cache: prompt heads mapped to read-only pages, locked by reference counts.

SGLang's decode (``--disaggregation-decode-enable-radix-cache``, #19746) matches a request
against its radix tree and locks the matched node (``_match_prefix_and_lock``:
``inc_lock_ref``) so that eviction leaves it alone; the request reads those pages as its
prompt's head and prefill sends only the rest. A head is one page here, and the key is a
page's tokens: a hit locks a page holding its first chunk (every prompt of a run opens with
the same system-prompt page).

Who owns a mapped page is the variant's ``radix_cache``: ``refcounted`` hands it to the tree
(the request's release no longer frees it, #38355); ``free_while_cached`` leaves it in the
request's table, whose release frees it while the tree still maps it (#38319). The events
that fill and read the tree, ``insert`` and ``share``, are ``refimpl/rules/radix.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
