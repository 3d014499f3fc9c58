"""Forced events (what replay does), the view, and the early-free use-after-free."""

from __future__ import annotations

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.errors import EngineRefused
from kvproof.refimpl.events import Event
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import Sizes, load_variant

TINY = Sizes(context_len=64, prefill_pool_tokens=64, decode_pool_tokens=64, page_size=4)


def cluster(name: str, **kw: object) -> Cluster:
    return Cluster(load_variant(name), sizes=TINY, decode_pages=6, **kw)  # type: ignore[arg-type]


def test_prompt_for_pages_sizes_the_reservation() -> None:
    c = cluster("sglang-0.5.22-pd")
    for k in (1, 2, 3):
        rid = c.submit("t", c.prompt_for_pages(k))
        c.apply(Event("arrive", rid))
        assert c.handoff.flights[rid].d.reserve == k
    with pytest.raises(KvproofInputError):
        c.prompt_for_pages(2, over_prefill_limit=True)  # prefill's limit equals decode's
    small_p = cluster("sglang-0.5.19-pd", prefill_pages=4)  # prefill admits 10 tokens
    over = small_p.prompt_for_pages(4, over_prefill_limit=True)
    assert len(over) > small_p.limits[0].max_req_input_len


def test_forced_alloc_and_refused_events() -> None:
    c = cluster("sglang-0.5.22-pd")
    rid = c.submit("t", c.prompt_for_pages(2))
    with pytest.raises(EngineRefused):
        c.apply(Event("send", rid))
    c.apply(Event("arrive", rid))
    c.apply(Event("alloc", rid, 5))
    with pytest.raises(EngineRefused):
        c.apply(Event("alloc", rid, 5))  # not free any more
    c.apply(Event("alloc", rid, 2))
    assert c.view().requests[rid].table == (5, 2)
    assert Event("send", rid) in c.enabled()
    assert c.view().pages[5].owner == rid and not c.view().pages[5].filled


def test_early_free_lets_a_late_write_land_in_another_request() -> None:
    # sglang-pd-early-free-abort: release = immediate, and posted writes cannot be cancelled.
    c = cluster("sglang-pd-early-free-abort", model="tiny")
    r0 = c.submit("A", c.prompt_for_pages(1))
    r1 = c.submit("B", c.prompt_for_pages(1))
    for ev in [Event("arrive", r0), Event("alloc", r0, 0), Event("send", r0)]:
        c.apply(ev)
    c.apply(Event("post", r0, 0))
    c.apply(Event("abort", r0))  # the client disconnects; page 0 is freed at once
    assert c.view().pages[0].owner is None
    for ev in [Event("arrive", r1), Event("alloc", r1, 0), Event("send", r1)]:
        c.apply(ev)
    c.apply(Event("post", r1, 0))
    c.apply(Event("land", r1, 0))
    c.apply(Event("land", r0, 0))  # the late write of the aborted request lands
    view = c.view()
    assert view.pages[0].stray and view.pages[0].writer == r0 and view.pages[0].owner == r1
    c.apply(Event("done", r1))
    c.apply(Event("commit", r1))
    assert c.response(r1).status == 200
    assert c.view().requests[r1].leaked


def test_deferred_release_waits_for_the_drain_ack() -> None:
    c = cluster("sglang-0.5.22-pd")
    r0 = c.submit("A", c.prompt_for_pages(1))
    for ev in [Event("arrive", r0), Event("alloc", r0, 0), Event("send", r0)]:
        c.apply(ev)
    c.apply(Event("post", r0, 0))
    c.apply(Event("abort", r0))
    assert c.view().requests[r0].dphase == "draining" and c.view().pages[0].owner == r0
    c.apply(Event("abort_seen", r0))
    assert Event("ack", r0) not in c.enabled()  # the write is still in flight
    c.apply(Event("land", r0, 0))
    c.apply(Event("ack", r0))
    assert c.view().pages[0].owner is None and not c.view().pages[0].stray
    assert c.response(r0).status == "aborted"
