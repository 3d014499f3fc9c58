"""The portfolio (``plan.py``'s phases, run by ``driver.py``): the proof settles a fixed
variant after a shallow BMC, and the full-depth BMC runs whenever neither settled it."""

from __future__ import annotations

import dataclasses

import pytest

from kvproof.checker.render.check_json import variant_json
from kvproof.checker.verify.driver import CheckJob, Protocols, prepare, run_job
from kvproof.checker.verify.plan import SHALLOW_DEPTH, CheckOptions
from kvproof.checker.verify.verdict import VariantVerdict
from kvproof.spec.variant import load_variant

DEPTH = SHALLOW_DEPTH + 2


def _job(name: str, *, given: bool = False, **kw: object) -> tuple[CheckJob, Protocols]:
    variant = dataclasses.replace(load_variant(name), bmc_depth=DEPTH, complete=False)
    options = CheckOptions(requests=2, pages=3, depth=DEPTH if given else None, **kw)  # type: ignore[arg-type]
    job, protocols = prepare(variant, options)
    # the complete search's fallback is its own test (test_check_complete.py)
    return dataclasses.replace(job, phases=job.phases[:-1]), protocols


def _run(name: str, **kw: object) -> VariantVerdict:
    return run_job(*_job(name, **kw))  # type: ignore[arg-type]


def test_the_proof_settles_a_fixed_variant_after_a_shallow_bmc() -> None:
    check = _run("vllm-nixl-push-fixed")
    assert check.settled_by == "proof"
    assert check.bmc.depth == SHALLOW_DEPTH
    assert check.proof is not None and check.proof.proved
    data = variant_json(check)
    assert data["settled_by"] == "proof" and data["verdict"] == "holds"
    assert {i["settled_by"] for i in data["invariants"]} == {"proof"}


def test_necessity_still_looks_to_the_full_depth() -> None:
    # Without lease_outlives_read, isolation breaks in 8 steps at 2x3: deeper than nothing
    # but the full depth, so a necessity check bounded by the shallow depth could miss it.
    check = _run("vllm-nixl-fixed")
    assert check.settled_by == "proof"
    (found,) = check.necessity
    assert found.needed is True and found.steps is not None


def test_depth_given_keeps_the_full_depth_bmc() -> None:
    check = _run("vllm-nixl-push-fixed", given=True)
    assert check.settled_by == "bmc" and check.bmc.depth == DEPTH


def test_a_failed_proof_deepens_the_bmc(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvproof.model.search import induction

    real = induction.prove

    def failing(protocol, *a, **kw):  # type: ignore[no-untyped-def]
        return dataclasses.replace(real(protocol, *a, **kw), proved=False)

    monkeypatch.setattr(induction, "prove", failing)
    check = _run("vllm-nixl-push-fixed", necessity=False)
    assert check.settled_by == "bmc" and check.bmc.depth == DEPTH


def test_a_shallow_counterexample_is_the_full_depth_bmcs() -> None:
    # Dropping the assumption breaks the fixed variant within the shallow depth: the verdict
    # then comes from the full-depth BMC, the same counterexample as without the portfolio.
    kw = {"without": ("bounded_transfer",), "necessity": False}
    check = _run("sglang-0.5.22-pd", **kw)
    plain = _run("sglang-0.5.22-pd", given=True, **kw)
    assert check.settled_by == "bmc" and not check.bmc.holds
    assert [(r.invariant, r.shortest) for r in check.bmc.results] == [
        (r.invariant, r.shortest) for r in plain.bmc.results
    ]
