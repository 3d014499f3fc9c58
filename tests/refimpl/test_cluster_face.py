"""``Cluster``'s read-only face: what ``ops/serve`` and conformance read of a request."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import Event
from kvproof.spec.variant import Sizes, load_variant

TINY = Sizes(context_len=64, prefill_pool_tokens=64, decode_pool_tokens=64, page_size=4)


def test_the_face_follows_one_push_request_through_its_writes() -> None:
    c = Cluster(load_variant("sglang-0.5.22-pd"), sizes=TINY, decode_pages=6)
    rid = c.submit("t", c.prompt_for_pages(2))
    before = c.status(rid)
    assert (before.arrived, before.decode, before.prefill) == (False, "idle", "idle")
    assert not c.can(Event("send", rid))  # nothing but arrive before arrive
    c.apply(Event("arrive", rid))
    c.apply(Event("alloc", rid, 5))
    c.apply(Event("alloc", rid, 2))
    c.apply(Event("send", rid))
    assert c.targets(rid) == (5, 2) and c.pages_of(rid).table == (5, 2)
    assert c.status(rid).prefill == "active" and c.in_flight() == ()
    c.apply(Event("post", rid, 2))
    assert c.in_flight() == ((rid, 2),) and c.in_flight(rid + 1) == ()
    assert c.pages_of(rid).posted == (2,) and len(c.pages_of(rid).prefill) == 2
    c.apply(Event("post", rid, 5))
    assert c.in_flight(rid) == ((rid, 2), (rid, 5))  # oldest first
    c.apply(Event("land", rid, 5))
    assert c.in_flight() == ((rid, 2),)
    # snapshots: later events change the engine, not what was handed out
    assert before.decode == "idle" and c.status(rid).decode == "transfer"
    with pytest.raises(FrozenInstanceError):
        before.decode = "done"  # type: ignore[misc]


def test_status_counts_generated_tokens_and_the_placeholder() -> None:
    c = Cluster(load_variant("sglang-0.5.19-pd"), sizes=TINY, decode_pages=6, prefill_pages=4)
    over = c.submit("t", c.prompt_for_pages(4, over_prefill_limit=True))
    c.apply(Event("arrive", over))
    assert c.status(over).prefilled == 1  # #30233: a one-token placeholder
    ok = c.submit("t", c.prompt_for_pages(1), max_new_tokens=3)
    c.run()
    assert c.status(ok).generated >= 3 and c.response(ok).status == 200
    assert c.status(ok).decode == "done" and c.status(ok).resp == "ok"
