"""The check plan (``checker/verify/plan.py``): every phase decision in one place, as data."""

from __future__ import annotations

import dataclasses

import pytest

from kvproof.checker.verify.plan import (
    SHALLOW_DEPTH,
    SUBSET_MIN_DEPTH,
    CheckOptions,
    Phase,
    check_mixed,
    plan,
)
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant


def names(phases: tuple[Phase, ...]) -> list[str]:
    return [p.name for p in phases]


def test_a_fixed_strengthened_variant_gets_the_portfolio() -> None:
    variant = load_variant("sglang-0.5.22-pd")
    phases = plan(variant, CheckOptions(), strengthened=True)
    assert names(phases) == ["bmc", "proof", "bmc", "proof", "necessity", "complete"]
    assert phases[0].depth == SHALLOW_DEPTH and phases[1].settles
    assert phases[2].depth == variant.bmc_depth
    assert phases[4].depth == variant.bmc_depth  # necessity looks to the full depth
    assert phases[5].reason == "variant"  # its TOML says complete = true


def test_depth_given_or_no_proof_keeps_one_full_depth_bmc() -> None:
    variant = load_variant("vllm-nixl-fixed")
    given = plan(variant, CheckOptions(depth=15), strengthened=True)
    assert names(given) == ["bmc", "proof", "necessity", "complete"]
    assert given[0].depth == 15 and not given[1].settles
    never = plan(variant, CheckOptions(prove="never", necessity=False), strengthened=True)
    assert names(never) == ["bmc", "complete"] and never[0].depth == variant.bmc_depth
    # a protocol without a strengthening has nothing to prove
    assert names(plan(variant, CheckOptions(), strengthened=False))[:2] == ["bmc", "necessity"]


def test_a_buggy_variant_gets_the_background_proof_only_deep() -> None:
    variant = load_variant("sglang-0.5.19-pd")
    deep = dataclasses.replace(variant, bmc_depth=SUBSET_MIN_DEPTH)
    shallow = dataclasses.replace(variant, bmc_depth=SUBSET_MIN_DEPTH - 1)
    (bmc, complete) = plan(deep, CheckOptions(), strengthened=True)
    assert bmc.background and bmc.depth == SUBSET_MIN_DEPTH
    assert complete.reason == "fallback"  # runs only if the check would end on unknown
    assert not plan(shallow, CheckOptions(), strengthened=True)[0].background
    assert not plan(deep, CheckOptions(depth=SUBSET_MIN_DEPTH), strengthened=True)[0].background
    # a buggy variant's assumptions carry no safety verdict: no necessity
    assert "necessity" not in names(plan(deep, CheckOptions(), strengthened=True))


def test_liveness_is_one_more_phase() -> None:
    variant = load_variant("sglang-pd-quarantine")
    assert variant.expect_liveness
    assert names(plan(variant, CheckOptions(), strengthened=True, every=True))[-1] == "liveness"
    assert "liveness" not in names(plan(variant, CheckOptions(), strengthened=True))
    only = plan(variant, CheckOptions(invariants=("answered",)), strengthened=True)
    assert only == (Phase("liveness", names=("answered",), necessity=True),)
    assert plan(variant, CheckOptions(liveness=True), strengthened=True)[0].names is None


def test_safety_and_liveness_names_in_one_run_are_bad_input() -> None:
    with pytest.raises(KvproofInputError, match="two runs"):
        check_mixed(CheckOptions(invariants=("isolation", "answered")))
    with pytest.raises(KvproofInputError, match="liveness properties only"):
        check_mixed(CheckOptions(invariants=("isolation",), liveness=True))
