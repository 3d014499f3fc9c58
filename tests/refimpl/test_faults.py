"""Every fault kind is exercised; fixed engines stay isolated, buggy ones are caught."""

from __future__ import annotations

import random

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.events import Event
from kvproof.refimpl.faults import FaultPlan
from kvproof.refimpl.oracle import leak_check, reference_engine
from kvproof.spec.variant import Sizes, load_variant

PLANS = {
    "fail": FaultPlan(fail=0.15),
    "delay": FaultPlan(delay=0.5),
    "reorder": FaultPlan(reorder=0.8),
    "duplicate": FaultPlan(duplicate_status=0.8),
    "lost": FaultPlan(lost_status=0.4),
    "disconnect": FaultPlan(disconnect=0.1),
    "prefill_abort": FaultPlan(prefill_abort=0.1),
    "timeout": FaultPlan(timeout=0.3, disconnect=0.1),
    "lease_expire": FaultPlan(lease_expire=0.3),
}
HOME = {"timeout": "sglang-pd-deferred-timeout", "lease_expire": "vllm-stale-block-lease"}


def workload(c: Cluster, seed: int, n: int = 6) -> None:
    rng = random.Random(seed)
    for i in range(n):
        length = rng.randint(1, c.limits[0].max_req_input_len)
        c.submit(f"t{i % 3}", [rng.randrange(1, 256) for _ in range(length)], 3)
    c.run()


def terminal(c: Cluster) -> bool:
    return all(c.response(r.rid).status is not None for r in c.requests)


@pytest.mark.parametrize("kind", sorted(PLANS))
def test_fault_kind_is_exercised_and_fixed_engine_stays_isolated(kind: str, small: Sizes) -> None:
    v = load_variant(HOME.get(kind, "sglang-0.5.22-pd"))
    seen = False
    for seed in range(6):
        c = Cluster(v, sizes=small, seed=seed, faults=PLANS[kind])
        workload(c, seed)
        seen |= any(k == kind for k, _ in c.fault_log)
        assert terminal(c)
        if not v.buggy:
            view = c.view()
            assert not any(p.stray for p in view.pages)
            assert not any(f.wrong for f in leak_check(c, reference=reference_engine(c)))
            assert not any(r.leaked for r in view.requests)
    assert seen, f"no {kind} fault in 6 seeds"


def test_fixed_engine_has_no_leak_under_every_fault_at_once(small: Sizes) -> None:
    plan = FaultPlan(
        fail=0.05, delay=0.3, reorder=0.5, duplicate_status=0.3, lost_status=0.1,
        disconnect=0.05, prefill_abort=0.05,
    )  # fmt: skip
    for name in ("sglang-0.5.22-pd", "sglang-0.5.22-pd-guarded", "vllm-nixl-fixed"):
        for seed in range(4):
            c = Cluster(load_variant(name), sizes=small, seed=seed, faults=plan)
            workload(c, seed, n=8)
            assert terminal(c)
            assert not any(p.stray for p in c.view().pages), (name, seed)
            assert not any(f.wrong for f in leak_check(c, reference=reference_engine(c)))


@pytest.mark.parametrize(
    ("name", "plan"),
    [
        ("sglang-pd-early-free-abort", FaultPlan(disconnect=0.15, delay=0.6)),
        ("sglang-pd-deferred-timeout", FaultPlan(disconnect=0.15, timeout=0.5, delay=0.6)),
        ("mooncake-batch-failed-partial", FaultPlan(fail=0.2, delay=0.6)),
    ],
)
def test_buggy_release_lets_a_late_write_land_in_a_foreign_page(
    name: str, plan: FaultPlan, small: Sizes
) -> None:
    hits = 0
    for seed in range(20):
        c = Cluster(load_variant(name), sizes=small, seed=seed, faults=plan)
        workload(c, seed, n=8)
        hits += any(p.stray for p in c.view().pages)
    assert hits, f"{name}: no stray write in 20 seeds"


def test_stale_lease_serves_someone_elses_blocks(small: Sizes) -> None:
    c = Cluster(load_variant("vllm-stale-block-lease"), sizes=small, model="tiny")
    rid = c.submit("A", "a" * 30, 4)
    for name in ("arrive", "send"):
        if name == "send":
            while not any(e.name == "send" for e in c.enabled()):
                c.apply(next(e for e in c.enabled() if e.name == "alloc"))
        c.apply(Event(name, rid))
    c.apply(Event("expire", rid))
    c.run()
    assert c.response(rid).status == 200
    (finding,) = leak_check(c)
    assert finding.wrong and all(s.writer is None for s in finding.stale_pages)


def test_explicit_schedule_is_applied_in_order(small: Sizes) -> None:
    plan = FaultPlan(schedule=(Event("abort", 1), Event("abort", 0)))
    c = Cluster(load_variant("sglang-0.5.22-pd"), sizes=small, faults=plan)
    workload(c, 0, n=3)
    scheduled = [ev for kind, ev in c.fault_log if kind == "scheduled"]
    assert scheduled == [Event("abort", 1), Event("abort", 0)]
    assert c.response(0).status == "aborted" and c.response(1).status == "aborted"


def test_vllm_extra_block_is_read_as_prompt(small: Sizes) -> None:
    c = Cluster(load_variant("vllm-decode-extra-block"), sizes=small, model="tiny")
    c.submit("A", "x" * 50, 4)
    c.run()
    c.submit("B", "y" * 20, 4)
    c.run()
    findings = leak_check(c)
    assert all(f.stale_pages for f in findings)
    assert any(f.wrong for f in findings)
