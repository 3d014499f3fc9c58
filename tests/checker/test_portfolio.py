"""The portfolio verdict (``checker/verify/portfolio.py``): the proof settles a fixed variant
after a shallow BMC, and the full-depth BMC runs whenever neither settled it."""

from __future__ import annotations

import dataclasses

import pytest

from kvproof.checker.verify import portfolio
from kvproof.checker.verify.check_pool import CheckJob, run_job
from kvproof.checker.verify.checking import to_json
from kvproof.spec.variant import load_variant

DEPTH = portfolio.SHALLOW_DEPTH + 2


def _job(name: str, **kw: object) -> CheckJob:
    return CheckJob(load_variant(name), 2, 3, DEPTH, None, "auto", **kw)  # type: ignore[arg-type]


def test_the_proof_settles_a_fixed_variant_after_a_shallow_bmc() -> None:
    check = run_job(_job("vllm-nixl-push-fixed"))
    assert check.settled_by == "proof"
    assert check.bmc.depth == portfolio.SHALLOW_DEPTH
    assert check.proof is not None and check.proof.proved
    data = to_json(check)
    assert data["settled_by"] == "proof" and data["verdict"] == "holds"
    assert {i["settled_by"] for i in data["invariants"]} == {"proof"}


def test_necessity_still_looks_to_the_full_depth() -> None:
    # Without lease_outlives_read, isolation breaks in 8 steps at 2x3: deeper than nothing
    # but the full depth, so a necessity check bounded by the shallow depth could miss it.
    check = run_job(_job("vllm-nixl-fixed"))
    assert check.settled_by == "proof"
    (found,) = check.necessity
    assert found.needed is True and found.steps is not None


def test_depth_given_keeps_the_full_depth_bmc() -> None:
    check = run_job(_job("vllm-nixl-push-fixed", depth_given=True))
    assert check.settled_by == "bmc" and check.bmc.depth == DEPTH


def test_a_failed_proof_deepens_the_bmc(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvproof.model.search import induction

    real = induction.prove

    def failing(protocol, *a, **kw):  # type: ignore[no-untyped-def]
        return dataclasses.replace(real(protocol, *a, **kw), proved=False)

    monkeypatch.setattr(induction, "prove", failing)
    check = run_job(_job("vllm-nixl-push-fixed", necessity=False))
    assert check.settled_by == "bmc" and check.bmc.depth == DEPTH


def test_a_shallow_counterexample_is_the_full_depth_bmcs() -> None:
    # Dropping the assumption breaks the fixed variant within the shallow depth: the verdict
    # then comes from the full-depth BMC, the same counterexample as without the portfolio.
    job = _job("sglang-0.5.22-pd", without=("bounded_transfer",), necessity=False)
    check = run_job(job)
    plain = run_job(dataclasses.replace(job, depth_given=True))
    assert check.settled_by == "bmc" and not check.bmc.holds
    assert [(r.invariant, r.shortest) for r in check.bmc.results] == [
        (r.invariant, r.shortest) for r in plain.bmc.results
    ]


def test_buggy_variants_keep_the_full_depth_bmc() -> None:
    job = _job("sglang-0.5.19-pd")
    assert not portfolio.settles(job, True)
