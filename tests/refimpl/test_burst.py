"""A burst of requests at once: no deadlock, no abort; enabled() as the brute force; the
public scheduling API."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import EVENT_NAMES, PAGE_EVENTS, Event
from kvproof.refimpl.faults import NO_FAULTS, FaultPlan
from kvproof.refimpl.oracle import leak_check, reference_engine
from kvproof.refimpl.scheduler import Scheduler
from kvproof.spec.variant import Sizes, load_variant

VARIANTS = sorted(p.stem for p in (Path(__file__).parents[2] / "spec" / "variants").glob("*.toml"))


def candidates(c: Cluster) -> Iterator[Event]:
    """Every event worth testing with ``can``, for every request ever submitted: a superset
    of the enabled ones, in the enumeration's order."""
    h = c.handoff
    free = h.decode.alloc.free_pages()
    for r, f in enumerate(h.flights):
        yield from (Event(name, r) for name in EVENT_NAMES if name not in PAGE_EVENTS)
        if f.req.arrived:
            if f.d.phase == "queued":
                yield from (Event("alloc", r, page) for page in free)
            for page in h.targets(f) if f.p.dst or not h.push else []:
                yield Event("post", r, page)
            # decode's radix cache (issue 12 item 4): a page of the table, a cached page
            yield from (Event("insert", r, page) for page in f.d.table)
            yield from (Event("share", r, page) for page in h.decode.tree.key)
    for t in h.transfer.in_flight.values():
        yield Event("land", t.rid, t.page)


# Events only a replay forces, never offered by the enumeration: ``crash`` (E20, a liveness
# lasso's; ``refimpl/rules/crash.py``) and ``stale_ack`` (E21, a late message from outside
# the run: ``refimpl/rules/stale_ack.py``).
UNOFFERED = frozenset({"crash", "stale_ack"})


def brute_force(c: Cluster) -> list[Event]:
    """The definition: every candidate of every request ever submitted that ``can`` allows,
    but the ``UNOFFERED`` ones."""
    return list(dict.fromkeys(ev for ev in candidates(c) if ev.name not in UNOFFERED and c.can(ev)))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sglang-0.5.22-pd", "vllm-nixl-fixed"])
def test_burst_of_64_completes_with_single_node_tokens(name: str) -> None:
    """Prefill computes only after decode's ``send`` (SGLang's bootstrap queue): 64
    requests submitted at once all complete, none is aborted for want of pages."""
    v = load_variant(name)
    c = Cluster(v, seed=0)
    rng = random.Random(0)
    p_max = c.limits[0].max_req_input_len
    over = set(rng.sample(range(64), 4))  # within the context, over the nodes' limits
    for i in range(64):
        n = rng.randint(p_max + 1, c.sizes.context_len - 1) if i in over else rng.randint(1, p_max)
        c.submit(f"t{i % 4}", [rng.randrange(1, 256) for _ in range(n)], rng.randint(1, 8))
    c.run()
    statuses = {r.rid: c.response(r.rid).status for r in c.requests}
    assert {r: s for r, s in statuses.items() if s != (400 if r in over else 200)} == {}
    assert not [kind for kind, _ in c.fault_log]  # no client gave up, nothing timed out
    findings = leak_check(c, reference=reference_engine(c))
    assert len(findings) == 60
    assert all(f.tokens_match and not f.stale_pages for f in findings)
    assert c.prefill.alloc.free_count == c.prefill.alloc.pages.stop  # P drained


@pytest.mark.parametrize("name", VARIANTS)
def test_enabled_equals_brute_force(name: str) -> None:
    """Walking the live requests only gives exactly the brute force's list, in its order,
    at every step of fault-injected runs (pages reused, aborts, drains, leases)."""
    v = load_variant(name)
    sizes = Sizes(context_len=128, prefill_pool_tokens=256, decode_pool_tokens=128, page_size=8)
    plan = FaultPlan(
        fail=0.05,
        delay=0.3,
        reorder=0.3,
        lost_status=0.1,
        disconnect=0.05,
        prefill_abort=0.05,
        timeout=0.1,
        lease_expire=0.1,
    )
    for seed in range(3):
        c = Cluster(v, sizes=sizes, seed=seed, faults=plan)
        rng = random.Random(seed)
        sched = Scheduler(c)
        for wave in range(3):
            for i in range(rng.randint(2, 6)):
                n = rng.randint(1, sizes.context_len - 1)
                c.submit(f"t{wave}{i}", [rng.randrange(1, 256) for _ in range(n)], 3)
            for _ in range(2000):
                assert c.enabled() == brute_force(c)
                if not sched.step():
                    break
        assert c.enabled() == brute_force(c)


def test_enabled_is_proportional_to_live_requests() -> None:
    """Finished requests leave the walk: after 64 completed, enabled() looks at none."""
    c = Cluster(load_variant("sglang-0.5.22-pd"), seed=0)
    for i in range(64):
        c.submit(f"t{i}", "hello " * (1 + i % 7), 2)
    assert len(c.enabled()) == 64  # 64 arrivals
    c.run()
    assert c.enabled() == [] and not list(c.handoff.live())
    rid = c.submit("t", "one more", 2)
    assert c.enabled() == [Event("arrive", rid)]


def test_scheduler_pick_is_public_and_keeps_no_memory_without_faults() -> None:
    c = Cluster(load_variant("sglang-0.5.22-pd"), seed=1)
    for i in range(4):
        c.submit(f"t{i}", "x" * (5 + 9 * i), 3)
    sched = Scheduler(c, faults=NO_FAULTS)
    steps = 0
    while (ev := sched.pick(enabled := c.enabled())) is not None:
        assert ev in enabled
        c.apply(ev)
        steps += 1
    assert steps > 0 and not sched.lost
    assert all(c.response(r.rid).status == 200 for r in c.requests)
    assert sched.pick([]) is None
