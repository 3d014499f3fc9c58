"""Disaggregated fixed engines give exactly the single-node tokens (many prompts, orders)."""

from __future__ import annotations

import random

import pytest

from kvproof.refimpl.cluster import Cluster
from kvproof.refimpl.oracle import leak_check, reference_engine
from kvproof.spec.variant import Sizes, load_variant

FIXED = ["sglang-0.5.22-pd", "sglang-0.5.22-pd-guarded", "vllm-nixl-fixed"]


@pytest.mark.parametrize("name", FIXED)
@pytest.mark.parametrize("model", [pytest.param("tiny", marks=pytest.mark.slow), "echo"])
def test_fixed_engine_matches_single_node(name: str, model: str, small: Sizes) -> None:
    v = load_variant(name)
    for seed in range(10):
        rng = random.Random(seed)
        c = Cluster(v, sizes=small, model=model, seed=seed)
        rids = []
        for wave in range(2):  # a second wave reuses the pages the first one freed
            for _ in range(rng.randint(2, 5)):
                n = rng.randint(1, c.limits[0].max_req_input_len)
                prompt = [rng.randrange(1, 256) for _ in range(n)]
                rids.append(c.submit(f"t{wave}{len(rids)}", prompt, rng.randint(1, 12)))
            c.run()
        findings = leak_check(c, reference=reference_engine(c))
        assert len(findings) == len(rids), [c.response(r) for r in rids]
        assert not [f for f in findings if f.wrong or f.stale_pages]


def test_same_seed_same_event_log(small: Sizes) -> None:
    v = load_variant("sglang-0.5.22-pd")

    def log(seed: int) -> list[object]:
        c = Cluster(v, sizes=small, seed=seed)
        for i in range(4):
            c.submit("t", "x" * (10 + 7 * i), 4)
        c.run()
        return list(c.events)

    assert log(3) == log(3)
    assert log(3) != log(4)
