"""The owner-tag guard is the engine's own claim, the oracle's ground truth is not.

Tags are stamped from what the engine knows (prefill stamps the tag decode gave it on the KV
it computes; the transfer carries the source page's tag; decode stamps the destination from
the descriptor), never from the recorder. So a bug in the stamping shows: the guard misses
the stray write it exists for, and the leak oracle, which reads only the recorder, still
reports the leak with the true writer.
"""

from __future__ import annotations

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.decode import DecodeNode
from kvproof.refimpl.events import Event
from kvproof.refimpl.oracle import leak_check
from kvproof.refimpl.prefill import PrefillNode, PrefillReq
from kvproof.spec.variant import Sizes, load_variant


def progress(c: Cluster, rid: int) -> Event:
    """The next event of ``rid`` on the happy path (no abort, no failure)."""
    return next(
        e
        for e in c.enabled()
        if e.rid == rid and e.name not in ("abort", "fail", "p_abort", "give_up")
    )


def running(small: Sizes) -> tuple[Cluster, int]:
    """Request 0 finished; request 1 running on the guarded fixed engine."""
    c = Cluster(load_variant("sglang-0.5.22-pd-guarded"), sizes=small, model="tiny")
    c.submit("A", "a" * 40, 4)
    c.run()
    rid = c.submit("B", "b" * 24, 6)
    while c.status(rid).decode != "running":
        c.apply(progress(c, rid))
    assert c.response(rid).status == 200
    return c, rid


def late_write(c: Cluster, writer: int, rid: int, src: int) -> None:
    """A posted write of ``writer`` (no cancel in the transfer engine) lands in a page of
    ``rid``: the stray write the guard exists for."""
    victim = c.handoff.flights[rid].d.table[1]
    c.handoff.transfer.post(writer, victim, src, c.prefill.pool)
    c.handoff.transfer.land(writer, victim, c.prefill.pool, c.decode)


def finish(c: Cluster, rid: int) -> None:
    for _ in range(3):
        if c.status(rid).decode == "running":
            c.apply(Event("step", rid))


def test_honest_stamps_trip_the_guard_on_a_stray_write(small: Sizes) -> None:
    c, rid = running(small)
    late_write(c, 0, rid, c.pages_of(0).prefill[0])
    finish(c, rid)
    assert c.response(rid).status == 500 and c.status(rid).guard_trips == 1
    assert not c.view().requests[rid].leaked  # the guard refused to read


def test_a_prefill_stamping_the_wrong_owner_is_caught_by_the_oracle(
    small: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, rid = running(small)
    # The bug: prefill stamps the KV it computes with the tag of the request decode serves
    # (a wrong owner) instead of the tag it was given for the request that owns the KV.
    wrong = c.decode.tags.tag_of(rid)

    def broken(self: PrefillNode, req: PrefillReq) -> None:
        for page in req.pages:
            self.pool.tags.stamp_tag(page, wrong)

    monkeypatch.setattr(PrefillNode, "stamp", broken)
    late = c.submit("C", "c" * 12, 2)
    while not c.handoff.flights[late].p.computed:
        c.apply(progress(c, late))
    late_write(c, late, rid, c.pages_of(late).prefill[0])
    finish(c, rid)
    # The guard was fooled: the stray bytes carried the reader's tag.
    assert c.status(rid).guard_trips == 0 and c.response(rid).status == 200
    # The oracle was not: it reads the recorder, which says who really wrote the page.
    (finding,) = [f for f in leak_check(c) if f.rid == rid]
    assert finding.wrong and finding.stale_pages[0].writer == late
    assert c.view().requests[rid].leaked


def test_a_decode_stamping_from_its_page_table_is_caught_by_the_oracle(
    small: Sizes, monkeypatch: pytest.MonkeyPatch
) -> None:
    c, rid = running(small)

    # The bug: decode stamps a landing page with its current owner's tag (what its page
    # table says should be there) instead of the tag the transfer descriptor carries.
    def broken(self: DecodeNode, page: int, data: object, tag: int) -> None:
        self.pool.put(page, data)  # type: ignore[arg-type]
        self.tags.stamp(page, self.alloc.owner.get(page))

    monkeypatch.setattr(DecodeNode, "receive", broken)
    late_write(c, 0, rid, c.pages_of(0).prefill[0])
    finish(c, rid)
    assert c.status(rid).guard_trips == 0 and c.response(rid).status == 200
    (finding,) = [f for f in leak_check(c) if f.rid == rid]
    assert finding.wrong and finding.stale_pages[0].writer == 0
