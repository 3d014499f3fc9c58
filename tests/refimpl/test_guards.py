"""Guards catch a tampered page table: checksum at commit, owner tags at every read."""

from __future__ import annotations

import dataclasses

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.errors import DoubleFree
from kvproof.refimpl.events import Event
from kvproof.refimpl.oracle import audit
from kvproof.spec.variant import Sizes, Variant, load_variant


def with_switches(name: str, **switches: object) -> Variant:
    v = load_variant(name)
    return dataclasses.replace(v, switches=dataclasses.replace(v.switches, **switches))


def transferred(v: Variant, small: Sizes) -> tuple[Cluster, int]:
    """Request 1 transferred and ready to commit; request 0 finished before it."""
    c = Cluster(v, sizes=small, model="tiny")
    c.submit("A", "a" * 40, 4)
    c.run()
    rid = c.submit("B", "b" * 24, 6)
    while c.handoff.requests[rid].poll != "success":
        ev = next(
            e for e in c.enabled() if e.rid == rid and e.name not in ("abort", "fail", "p_abort")
        )
        c.apply(ev)
    return c, rid


def tamper(c: Cluster, rid: int, *, keep_allocator: bool = True) -> None:
    """Point one table entry at a page holding request 0's stale KV (a buggy reallocation:
    the allocator agrees, so only the data guards can notice)."""
    table = c.handoff.d[rid].table
    stale = next(p for p in range(c.decode.num_pages) if c.decode.pool.writer[p] == 0)
    if keep_allocator:
        c.decode.alloc.free(table[1])
        c.decode.alloc.alloc(rid, stale)
    table[1] = stale


def test_debug_allocator_catches_a_raw_tampered_entry_at_release(small: Sizes) -> None:
    c, rid = transferred(load_variant("sglang-0.5.22-pd"), small)
    tamper(c, rid, keep_allocator=False)
    c.apply(Event("commit", rid))
    with pytest.raises(DoubleFree):
        c.apply(Event("finish", rid))


def test_checksum_catches_a_tampered_table_at_commit(small: Sizes) -> None:
    c, rid = transferred(with_switches("sglang-0.5.22-pd", transfer_checksum=True), small)
    tamper(c, rid)
    c.apply(Event("commit", rid))
    assert c.response(rid).status == 500 and "checksum" in c.response(rid).reason


def test_page_tags_catch_a_tampered_table_at_the_first_read(small: Sizes) -> None:
    c, rid = transferred(with_switches("sglang-0.5.22-pd", page_tags=True), small)
    tamper(c, rid)
    c.apply(Event("commit", rid))
    assert c.response(rid).status == 500
    assert c.handoff.requests[rid].guard_trips == 1
    assert not c.view().requests[rid].leaked  # the guard refused to read


def test_page_tags_catch_a_table_tampered_after_commit(small: Sizes) -> None:
    c, rid = transferred(load_variant("sglang-0.5.22-pd-guarded"), small)
    c.apply(Event("commit", rid))
    assert c.response(rid).status == 200
    tamper(c, rid)
    c.apply(Event("step", rid))
    assert c.response(rid).status == 500 and c.handoff.requests[rid].guard_trips == 1


def test_without_guards_the_tampered_read_is_a_leak(small: Sizes) -> None:
    c, rid = transferred(load_variant("sglang-0.5.22-pd"), small)
    tamper(c, rid)
    c.run()
    (finding,) = [f for f in audit(c) if f.rid == rid]
    assert finding.leak and finding.stale_pages[0].writer == 0
