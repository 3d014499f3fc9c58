"""Prefill's source blocks freed with a READ or WRITE of them in flight: the model's side
(``expire`` taken while ``inflight``) is compared with the code's (a handle still in
``PROC`` when prefill's scheduler freed the blocks), not only observed (issue 40)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.conform import model_side
from kvproof.checker.conform.vllm.engine import open_vllm
from kvproof.checker.conform.vllm.run import conform
from kvproof.checker.conform.walk import Script, walk
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.spec.variant import load_variant

A = ActionInstance


def _scripted(variant_name: str, tree: Path, moves: list[ActionInstance]):
    variant = load_variant(variant_name)
    with open_vllm(variant, str(tree)) as engine:
        concrete = Concrete(Instance(protocol_of(variant), dict(engine.sizes)))
        init = next(
            s
            for s in concrete.initial_states()
            if not any(concrete.value(s, k, (r,)) for k in ("over_p", "over_d") for r in range(2))
        )
        h = engine.harness(model_side.requests_of(concrete, init))
        return walk(concrete, init, h, Script(moves), allowed=lambda a: True, max_steps=30)


@pytest.mark.parametrize(
    ("name", "post"),
    [("vllm-0.34-nixl-push", True), ("vllm-0.34-nixl-push", False), ("vllm-0.34-nixl-pull", True)],
)
def test_both_sides_agree_on_a_free_under_a_transfer(
    vllm_tree: Path, name: str, post: bool
) -> None:
    """0.34.0's lease expires with the WRITE (push) or READ (pull) posted or not: the
    faithful model and the code agree on whether it was in flight."""
    moves = [A("arrive", (0,)), A("alloc", (0, 0)), A("send", (0,))]
    moves += [A("post", (0, 0))] if post else []
    moves += [A("expire", (0,))]
    res = _scripted(name, vllm_tree, moves)
    assert not res.diverged and not res.refused, [m.line() for m in res.mismatches]
    assert res.code is not None and res.code.requests[0].source_freed_in_flight is post


@pytest.mark.slow
def test_the_safe_push_design_meets_a_free_under_an_inflight_write(vllm_tree: Path) -> None:
    """vllm-nixl-push-fixed claims prefill holds its source until the WRITE is read; with
    faults on, 0.34.0's lease frees it under the WRITE on some seeds (most meet behaviour 1,
    abort_notifies_prefill, first: 1 seed in 40 at 200 walks after the guide's steering)."""
    for seed in range(40):
        run = conform(load_variant("vllm-nixl-push-fixed"), str(vllm_tree), seed=seed)
        assert run.exit_code == 1
        if any("source_freed_in_flight: model False, code True" in d for d in run.detail):
            return
    pytest.fail("seeds 0-39 never met the in-flight free")
