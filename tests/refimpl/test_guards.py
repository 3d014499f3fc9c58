"""Guards catch a tampered page table: checksum at commit, owner tags at every read."""

from __future__ import annotations

import dataclasses

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.errors import DoubleFree
from kvproof.refimpl.events import Event
from kvproof.refimpl.oracle import leak_check
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
    while c.handoff.flights[rid].req.poll != "success":
        ev = next(
            e
            for e in c.enabled()
            if e.rid == rid and e.name not in ("abort", "fail", "p_abort", "give_up")
        )
        c.apply(ev)
    return c, rid


def tamper(c: Cluster, rid: int, *, keep_allocator: bool = True) -> None:
    """Point one table entry at a page holding request 0's stale KV (a buggy reallocation:
    the allocator agrees, so only the data guards can notice)."""
    table = c.handoff.flights[rid].d.table
    stale = next(p for p in range(c.decode.num_pages) if c.truth.decode.writer[p] == 0)
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
    c, rid = transferred(with_switches("sglang-0.5.22-pd", transfer_checksum="both"), small)
    tamper(c, rid)
    c.apply(Event("commit", rid))
    assert c.response(rid).status == 500 and "checksum" in c.response(rid).reason


def test_page_tags_catch_a_tampered_table_at_the_first_read(small: Sizes) -> None:
    c, rid = transferred(with_switches("sglang-0.5.22-pd", page_tags=True), small)
    tamper(c, rid)
    c.apply(Event("commit", rid))
    assert c.response(rid).status == 500
    assert c.status(rid).guard_trips == 1
    assert not c.view().requests[rid].leaked  # the guard refused to read


def test_page_tags_catch_a_table_tampered_after_commit(small: Sizes) -> None:
    c, rid = transferred(load_variant("sglang-0.5.22-pd-guarded"), small)
    c.apply(Event("commit", rid))
    assert c.response(rid).status == 200
    tamper(c, rid)
    c.apply(Event("step", rid))
    assert c.response(rid).status == 500 and c.status(rid).guard_trips == 1


def test_without_guards_the_tampered_read_is_a_wrong_answer(small: Sizes) -> None:
    c, rid = transferred(load_variant("sglang-0.5.22-pd"), small)
    tamper(c, rid)
    c.run()
    (finding,) = [f for f in leak_check(c) if f.rid == rid]
    assert finding.wrong and finding.stale_pages[0].writer == 0


def count_guarded_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count calls of the tag-checking kernel by the tiny model (one per checked read)."""
    import kvproof.refimpl.tiny_model as tiny_model

    calls = [0]
    kernel = tiny_model.paged_decode_guarded

    def spy(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        return kernel(*args, **kwargs)

    monkeypatch.setattr(tiny_model, "paged_decode_guarded", spy)
    return calls


def test_an_unchanged_request_reuses_its_passed_check(
    small: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, rid = transferred(load_variant("sglang-0.5.22-pd-guarded"), small)
    calls = count_guarded_reads(monkeypatch)
    d = c.handoff.flights[rid].d
    c.apply(Event("commit", rid))
    assert calls[0] == 1 and c.response(rid).status == 200
    tail = list(d.tail)
    for _ in range(3):
        c.apply(Event("step", rid))
    assert d.tail == tail  # same pages read, no tag written: the first check still holds
    assert calls[0] == 1 and c.status(rid).decode == "running"


def running_after_a_passed_check(
    small: Sizes, monkeypatch: pytest.MonkeyPatch
) -> tuple[Cluster, int, list[int]]:
    """Request 1 running, its last read served by a cached check; the spy counts from here."""
    c, rid = transferred(load_variant("sglang-0.5.22-pd-guarded"), small)
    c.apply(Event("commit", rid))
    c.apply(Event("step", rid))
    calls = count_guarded_reads(monkeypatch)
    c.apply(Event("step", rid))
    assert calls[0] == 0  # the check is cached from here on
    return c, rid, calls


def test_a_stray_write_after_a_passed_check_trips_the_next_read(
    small: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, rid, calls = running_after_a_passed_check(small, monkeypatch)
    # A late write of request 0 (no cancel in the transfer engine) lands in rid's page.
    victim = c.handoff.flights[rid].d.table[1]
    src = next(p for p, w in enumerate(c.truth.prefill.writer) if w not in (rid, None))
    c.handoff.transfer.post(0, victim, src, c.prefill.pool)
    c.handoff.transfer.land(0, victim, c.prefill.pool, c.decode)
    c.apply(Event("step", rid))
    assert calls[0] == 1  # the kernel-level guard ran again, and it is what tripped
    assert c.response(rid).status == 500 and c.status(rid).guard_trips == 1


def test_a_tag_written_around_stamp_after_a_passed_check_trips(
    small: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, rid, calls = running_after_a_passed_check(small, monkeypatch)
    c.decode.tags.tags[c.handoff.flights[rid].d.table[0]] = 12345  # not through stamp()
    c.apply(Event("step", rid))
    assert calls[0] == 1
    assert c.response(rid).status == 500 and c.status(rid).guard_trips == 1


def test_a_table_tampered_after_a_passed_check_trips_the_next_read(
    small: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, rid, calls = running_after_a_passed_check(small, monkeypatch)
    tamper(c, rid)  # no tag write at all: the pages read changed
    c.apply(Event("step", rid))
    assert calls[0] == 1
    assert c.response(rid).status == 500 and c.status(rid).guard_trips == 1


def test_the_cpu_checksum_is_zlib_over_the_page_bytes() -> None:
    import zlib

    from kvproof.kernels import KernelInputError, page_checksum
    from kvproof.refimpl.pool import KVPool, PoolGeometry

    pool = KVPool(PoolGeometry(2, 6, 8, 2, 16), seed=3)
    pages = [4, 0, 4, 2]
    want = tuple(page_checksum(pool.layer(i), pages) for i in range(2))
    raw = b"".join(pool.data[0, kv, p].numpy().tobytes() for p in pages for kv in (0, 1))
    assert pool.checksum(pages) == want and want[0] == zlib.adler32(raw)
    with pytest.raises(KernelInputError):
        pool.checksum([0, -1])
    # the per-page views it keeps see later writes (a transfer landing, other traffic)
    pool.scribble(4)
    after = tuple(page_checksum(pool.layer(i), pages) for i in range(2))
    assert after != want and pool.checksum(pages) == after


def grow_by_a_tail_page(c: Cluster, rid: int) -> None:
    d = c.handoff.flights[rid].d
    tail = len(d.tail)
    while len(d.tail) == tail:
        c.apply(Event("step", rid))


def test_a_read_grown_by_decodes_own_tail_page_reuses_its_check(
    small: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, rid = transferred(load_variant("sglang-0.5.22-pd-guarded"), small)
    c.handoff.flights[rid].req.max_new_tokens = 40
    calls = count_guarded_reads(monkeypatch)
    c.apply(Event("commit", rid))
    grow_by_a_tail_page(c, rid)
    grow_by_a_tail_page(c, rid)
    assert calls[0] == 1 and c.response(rid).status == 200  # only the commit read checked


def test_a_foreign_tag_on_a_tail_page_makes_the_kernel_trip(
    small: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, rid = transferred(load_variant("sglang-0.5.22-pd-guarded"), small)
    c.handoff.flights[rid].req.max_new_tokens = 40
    c.apply(Event("commit", rid))
    grow_by_a_tail_page(c, rid)
    calls = count_guarded_reads(monkeypatch)
    c.decode.tags.stamp_tag(c.handoff.flights[rid].d.tail[-1], 12345)  # e.g. a misdirected landing
    c.apply(Event("step", rid))
    assert calls[0] == 1
    assert c.response(rid).status == 500 and c.status(rid).guard_trips == 1


def test_a_tag_write_drops_the_check_of_every_reader_of_the_page() -> None:
    from kvproof.refimpl.tags import PageTags

    tags = PageTags(8)
    for rid in (1, 2):
        tags.new_generation(rid)
    for page in range(4):
        tags.stamp(page, 1)
    # two readers over one shared page (a prefix cache's read-only page), both passed
    tags.passed(1, [0, 1], tags.version)
    tags.passed(2, [1, 2], tags.version)
    assert tags.unchanged(1, [0, 1]) and tags.unchanged(2, [1, 2])
    tags.stamp_tag(3, 99)  # a page neither read: both checks still hold
    assert tags.unchanged(1, [0, 1]) and tags.unchanged(2, [1, 2])
    tags.stamp_tag(1, 99)  # the shared page: neither check says anything about it now
    assert not tags.unchanged(1, [0, 1]) and not tags.unchanged(2, [1, 2])
    tags.passed(1, [0], tags.version)
    tags.tags[0] = 7  # a write behind stamp_tag's back drops every check
    assert not tags.unchanged(1, [0])


def test_a_write_behind_stamp_is_not_hidden_by_a_later_stamp() -> None:
    """A later ``stamp_tag`` on another page must not adopt the tensor's new version as if
    the write behind its back had been its own (it did, before: the check over the written
    page was reused)."""
    from kvproof.refimpl.tags import PageTags

    tags = PageTags(8)
    tags.new_generation(1)
    for page in range(2):
        tags.stamp(page, 1)
    tags.passed(1, [0, 1], tags.version)
    tags.tags[0] = 7  # behind stamp_tag's back, into a checked page
    tags.stamp_tag(5, 99)  # a page the check did not cover, stamped properly
    assert not tags.unchanged(1, [0, 1])
