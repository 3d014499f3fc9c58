"""The engine's decode radix cache (issue 12 item 4): insert, share, lock refs, release."""

from __future__ import annotations

from kvproof.refimpl.cluster import FILLER, Cluster
from kvproof.refimpl.events import Event
from kvproof.refimpl.radix import TREE
from kvproof.spec.variant import Sizes, load_variant

TINY = Sizes(context_len=64, prefill_pool_tokens=64, decode_pool_tokens=64, page_size=4)
RACE, FIXED = "sglang-pd-decode-radix-race", "sglang-pd-decode-radix-fixed"


def two_requests(name: str) -> tuple[Cluster, int, int]:
    """r0 (one page, no hit) runs and inserts page 0; r1's head (one page) hits."""
    c = Cluster(load_variant(name), sizes=TINY, decode_pages=4)
    r0 = c.submit("A", list(FILLER[:4]))  # one full page
    r1 = c.submit("B", list(FILLER[:8]))  # the same first page: a head hit
    for ev in ("arrive", "alloc", "send", "post", "land", "done", "commit"):
        c.apply(Event(ev, r0, 0 if ev in ("alloc", "post", "land") else None))
    assert Event("insert", r0, 0) in c.enabled()
    c.apply(Event("insert", r0, 0))
    c.decode.prefix_pages = 1  # the deployment: r1's head is decode's cached page
    c.apply(Event("arrive", r1))
    return c, r0, r1


def test_refcounted_tree_owns_the_page_and_locks_it() -> None:
    c, r0, r1 = two_requests(FIXED)
    assert c.decode.alloc.owner[0] == TREE and c.view().pages[0].cached
    assert c.view().requests[r0].shared == (0,) and c.view().requests[r0].table == ()
    assert not c.can(Event("send", r1))  # a hit locks its head first
    assert Event("share", r1, 0) in c.enabled()
    c.apply(Event("share", r1, 0))
    c.apply(Event("finish", r0))
    assert not c.decode.alloc.is_free(0)  # released requests do not free the tree's page
    assert c.decode.tree.locks[0] == {r1}
    for ev in ("alloc", "send", "post", "land", "done", "commit"):
        c.apply(Event(ev, r1, 1 if ev in ("alloc", "post", "land") else None))
    assert c.requests[r1].resp == "ok" and not c.truth.read_stale(r1)
    assert c.view().pages[0].prefix_ok and not c.view().pages[0].shared_write
    c.apply(Event("finish", r1))
    assert c.decode.tree.locks[0] == set()


def test_free_while_cached_lets_a_transfer_overwrite_the_shared_page() -> None:
    c, r0, r1 = two_requests(RACE)
    assert c.view().requests[r0].table == (0,)  # still the request's: #38319
    c.apply(Event("share", r1, 0))
    c.apply(Event("finish", r0))
    assert c.decode.alloc.is_free(0) and 0 in c.decode.tree.key  # freed while cached
    for ev in ("alloc", "send", "post", "land"):
        c.apply(Event(ev, r1, 0 if ev != "send" else None))
    view = c.view().pages[0]
    assert view.shared_write and not view.prefix_ok
    c.apply(Event("done", r1))
    c.apply(Event("commit", r1))
    assert c.truth.read_stale(r1)  # its head page holds its own second chunk now


def test_share_needs_a_matching_head() -> None:
    c = Cluster(load_variant(FIXED), sizes=TINY, decode_pages=4)
    r0 = c.submit("A", list(FILLER[:4]))
    r1 = c.submit("B", list(FILLER[4:12]))  # another first page
    for ev in ("arrive", "alloc", "send", "post", "land", "done", "commit", "insert"):
        c.apply(Event(ev, r0, 0 if ev in ("alloc", "post", "land", "insert") else None))
    c.decode.prefix_pages = 1
    c.apply(Event("arrive", r1))
    assert not c.can(Event("share", r1, 0))
    assert not any(e.name == "share" for e in c.enabled())


def test_no_radix_events_without_the_radix_cache() -> None:
    c = Cluster(load_variant("vllm-nixl-push-fixed"), sizes=TINY, decode_pages=4)
    r0 = c.submit("A", c.prompt_for_pages(1))
    for ev in ("arrive", "alloc", "send", "post", "land", "done", "commit"):
        c.apply(Event(ev, r0, 0 if ev in ("alloc", "post", "land") else None))
    assert not c.can(Event("insert", r0, 0))
    assert not any(e.name in ("insert", "share") for e in c.enabled())
