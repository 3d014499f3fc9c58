"""``Cluster``'s faces: what ``ops/serve`` and conformance read of a request, and what the
environment sets (limits, a prefix hit, other traffic's KV)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import Event
from kvproof.refimpl.limits import INPUT_HEADROOM, Limits
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


def test_the_counters_follow_the_allocators() -> None:
    c = Cluster(load_variant("sglang-0.5.22-pd"), sizes=TINY, decode_pages=6, tail_pages=8)
    start = c.counts()
    assert (start.decode_pages, start.decode_free, start.tail_pages) == (6, 6, 8)
    assert start.prefill_free == start.prefill_pages == 16
    rid = c.submit("t", c.prompt_for_pages(2))
    c.apply(Event("arrive", rid))
    c.apply(Event("alloc", rid, 5))
    assert c.counts().decode_free == 5 and c.owner(5) == rid and c.owner(4) is None
    assert not c.is_free("decode", 5) and c.is_free("decode", 4)


def test_set_limits_decides_the_next_arrival() -> None:
    """The environment's face: the deployment's limits, read at ``arrive`` (replay puts a
    prompt on the trace's side of each node's limit this way)."""
    c = Cluster(load_variant("sglang-0.5.22-pd"), sizes=TINY, decode_pages=6)
    _, decode = c.limits
    rid = c.submit("t", c.prompt_for_pages(2))
    n = len(c.requests[rid].prompt)
    tight = Limits(n - 1 + INPUT_HEADROOM, n - 1)
    c.set_limits(tight, decode)
    assert c.limits == (tight, decode)
    c.apply(Event("arrive", rid))
    assert c.requests[rid].over_p and not c.requests[rid].over_d


def test_plant_kv_writes_through_the_engines_model() -> None:
    """Other traffic's KV lands in the pool as the engine's own model computes it: the same
    bytes a request of those tokens would leave."""
    v = load_variant("sglang-0.5.22-pd")
    a, b = Cluster(v, sizes=TINY, decode_pages=6), Cluster(v, sizes=TINY, decode_pages=6)
    tokens = list(range(1, 5))
    a.plant_kv("decode", tokens, 4, [3, 2])
    b.plant_kv("decode", tokens, 4, [3, 2])
    boot = Cluster(v, sizes=TINY, decode_pages=6).decode.pool.data[:, :, 2]
    planted = a.decode.pool.data[:, :, 2]
    assert planted.equal(b.decode.pool.data[:, :, 2])  # deterministic: the engine's model
    assert not planted.equal(boot)  # and the page's bytes changed from boot noise
    assert a.decode.pool.data[:, :, 4].equal(b.decode.pool.data[:, :, 4])


@pytest.mark.parametrize("pages", [0, 1])
def test_set_prefix_hit_decides_the_next_arrivals_hit(pages: int) -> None:
    c = Cluster(load_variant("vllm-nixl-push-fixed"), sizes=TINY, decode_pages=6)
    rid = c.submit("t", c.prompt_for_pages(3))
    c.set_prefix_hit(pages)
    c.apply(Event("arrive", rid))
    assert c.requests[rid].hit is bool(pages)
