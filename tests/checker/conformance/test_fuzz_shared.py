"""What a fuzz batch shares between its walks changes no walk (issue 30's speed-ups).

A batch builds the model side once (``lockstep.ModelSide``) and remembers the single node's
answers (``fuzz.RememberedAnswers``); every walk must come out exactly as a walk built alone.
"""

from __future__ import annotations

import random

import pytest

from kvproof.checker.conformance.fuzz import RememberedAnswers
from kvproof.checker.conformance.lockstep import Lockstep, ModelSide
from kvproof.checker.conformance.walk import SIZES, Walk, run_walk
from kvproof.refimpl.models import build_model
from kvproof.refimpl.single_node import SingleNode
from kvproof.spec.variant import load_variant


def _walks(n: int, seed: int) -> list[Walk]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        flags = lambda: tuple(rng.random() < 0.2 for _ in range(2))  # noqa: E731
        reserve = tuple(rng.randint(1, 3) for _ in range(2))
        choices = tuple(rng.randrange(2**16) for _ in range(40))
        out.append(Walk(flags(), flags(), reserve, rng.choice([40, rng.randint(0, 40)]), choices))
    return out


@pytest.mark.parametrize("name", ["sglang-0.5.19-pd", "vllm-nixl-fixed", "sglang-0.5.22-pd"])
def test_a_shared_model_side_and_remembered_answers_change_no_walk(name: str) -> None:
    v = load_variant(name)
    model = build_model("echo", seed=0)
    side = ModelSide.of(v, SIZES)
    remembered = RememberedAnswers(SingleNode(model, page_size=16, num_pages=64))
    kinds = set()
    for walk in _walks(25, seed=len(name)):
        alone = run_walk(v, walk, faults=True, model=model)
        shared = run_walk(v, walk, faults=True, model=model, side=side, reference=remembered)
        assert shared.trace == alone.trace
        assert (shared.kind, shared.detail, shared.faults) == (
            alone.kind,
            alone.detail,
            alone.faults,
        )
        assert [r.text for r in shared.responses] == [r.text for r in alone.responses]
        kinds.add(alone.kind)
    if name == "sglang-0.5.19-pd":
        assert kinds - {None}, "the incident's walks find something: the comparison saw findings"


def test_a_model_side_serves_only_its_own_variant_and_sizes() -> None:
    side = ModelSide.of(load_variant("sglang-0.5.22-pd"), SIZES)
    init = {"over_p": {(0,): False, (1,): False}, "over_d": {(0,): False, (1,): False}}
    with pytest.raises(ValueError, match=r"built for sglang-0\.5\.22-pd"):
        Lockstep(load_variant("sglang-0.5.19-pd"), SIZES, init, (1, 1), side=side)
    with pytest.raises(ValueError, match="built for"):
        Lockstep(load_variant("sglang-0.5.22-pd"), {"Req": 2, "Page": 2}, init, (1, 1), side=side)
