"""Unbounded proofs: fixed variants proved, weakened invariants give readable CTIs."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kvproof.checker.cli import main
from kvproof.model.handoff import build_handoff, protocol_of
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.explain import step_label
from kvproof.model.lang.instance import Instance
from kvproof.model.search.induction import prove
from kvproof.spec.variant import list_variants, load_variant

FIXED = [v.name for v in list_variants() if not v.buggy]


@pytest.mark.slow
@pytest.mark.parametrize("name", FIXED)
def test_fixed_variants_are_proved(name: str) -> None:
    result = prove(protocol_of(load_variant(name)))  # under the variant's assumptions
    assert result.proved, result.summary
    assert result.cti is None and result.queries > 0
    # cores name real conjuncts
    assert set().union(*map(set, result.cores.values())) <= set(result.conjuncts)


def test_weakened_strengthening_gives_a_replayable_cti() -> None:
    protocol = protocol_of(load_variant("sglang-0.5.22-pd"))
    weakened = dataclasses.replace(
        protocol,
        strengthening=tuple(c for c in protocol.strengthening if c.name != "inflight_held"),
    )
    result = prove(weakened)
    assert not result.proved
    cti = result.cti
    assert cti is not None and cti.query == "consecution" and cti.action is not None
    # the CTI is small and re-checks concretely: pre satisfies all conjuncts, post fails one
    assert sum(cti.sizes.values()) <= 4
    concrete = Concrete(Instance(weakened, cti.sizes))
    conjuncts = weakened.safety + weakened.strengthening
    assert all(concrete.check(c, cti.pre) for c in conjuncts)
    post = concrete.step(cti.pre, cti.action)
    assert post == cti.post
    assert not concrete.check(weakened.invariant(cti.conjunct), post)
    described = cti.describe()
    assert described["action"] == step_label(concrete, cti.action) and described["pre"]


def test_buggy_variant_is_not_proved() -> None:
    result = prove(build_handoff(load_variant("sglang-pd-early-free-abort").switches))
    assert not result.proved and result.cti is not None
    assert result.cti.action is not None and result.cti.action.action == "abort"


@pytest.mark.slow
def test_prove_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "sglang-0.5.22-pd", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["proved"] and "all numbers of requests and pages" in data["summary"]
    assert main(["prove", "sglang-0.5.19-pd", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert not data["proved"] and data["cti"]["conjunct"]


@pytest.mark.slow
def test_parallel_check_returns_plain_results(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["check", "sglang-pd-early-free-abort", "sglang-0.5.22-pd", "--prove", "--json"]
    small = ["--depth", "6", "--requests", "2", "--pages", "2"]
    assert main([*args, *small, "--workers", "2"]) == 1
    parallel = json.loads(capsys.readouterr().out)
    assert main([*args, *small, "--workers", "1"]) == 1
    serial = json.loads(capsys.readouterr().out)
    assert [x["variant"] for x in parallel] == [x["variant"] for x in serial]
    # the CTI is plain data: it crossed the process boundary with its description
    cti_p, cti_s = parallel[0]["proof"]["cti"], serial[0]["proof"]["cti"]
    assert cti_p["conjunct"] == cti_s["conjunct"] and cti_p["pre"] and cti_p["changes"]
    assert cti_p["action"].split("(")[0] == cti_s["action"].split("(")[0] == "abort"
    assert parallel[1]["proof"]["proved"] and serial[1]["proof"]["proved"]
    for a, b in zip(parallel, serial, strict=True):
        assert [i["verdict"] for i in a["invariants"]] == [i["verdict"] for i in b["invariants"]]


def test_a_cti_is_plain_data() -> None:
    """No closures inside results: a CTI pickles, with its description."""
    import pickle

    result = prove(build_handoff(load_variant("sglang-pd-early-free-abort").switches))
    assert result.cti is not None
    again = pickle.loads(pickle.dumps(result))
    assert again.cti.describe() == result.cti.describe() and again.cti.protocol == "handoff"
