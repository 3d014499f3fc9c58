"""Invariant inference and complete checking on a user protocol with no strengthening.

``examples/deep_bug/pipeline.py``: its bug needs 9 steps, deeper than its bmc_depth (6).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.verify.protocols import load_protocol, resolve_variants
from kvproof.model.candidates import Templates, candidates
from kvproof.model.complete import check_complete
from kvproof.model.concrete import Concrete
from kvproof.model.dsl import Protocol
from kvproof.model.induction import prove
from kvproof.model.infer import infer, load, sample_states, save, with_strengthening
from kvproof.model.instance import Instance
from kvproof.spec.errors import KvproofInputError

SPEC = str(Path(__file__).resolve().parents[2] / "examples/deep_bug/pipeline.py") + ":Pipeline"


def pipeline(name: str) -> Protocol:
    user = load_protocol(SPEC)
    (variant,) = resolve_variants([name], False, None, user)
    return user.factory(variant.switches)


def test_candidates_come_from_reachable_states() -> None:
    protocol = pipeline("release-waits")
    sizes = {"Req": 2, "Page": 2}
    clauses = candidates(
        protocol, Concrete(Instance(protocol, sizes)), sample_states(protocol, sizes)
    )
    texts = {c.text for c in clauses}
    assert "forall r0: Req, p0: Page. owns(r0, p0) | !writing(r0, p0)" in texts
    assert "forall p0: Page. !stray(p0)" in texts
    # every candidate holds on every sampled state (no cube the samples show)
    concrete = Concrete(Instance(protocol, sizes))
    from kvproof.model.candidates import Evaluator

    ev = Evaluator(concrete)
    for data in sample_states(protocol, sizes):
        assert all(ev.holds(c, data) for c in clauses)


def test_inference_proves_the_fixed_variant() -> None:
    result = infer(pipeline("release-waits"))
    assert result.proved, result.summary
    assert result.proof is not None and result.proof.proved
    texts = [c.text for c in result.inferred]
    assert "forall r0: Req, p0: Page. owns(r0, p0) | !writing(r0, p0)" in texts


def test_inference_does_not_prove_the_buggy_variant() -> None:
    result = infer(pipeline("release-early"))
    assert not result.proved
    assert "no_stray_write" in result.reason


def test_saved_strengthening_is_read_back(tmp_path: Path) -> None:
    protocol = pipeline("release-waits")
    result = infer(protocol)
    path = tmp_path / "inv.json"
    save(path, protocol, result.inferred)
    proof = prove(dataclasses.replace(protocol, strengthening=load(path, protocol)))
    assert proof.proved
    assert prove(with_strengthening(protocol, result.inferred)).proved
    path.write_text("{}")
    with pytest.raises(KvproofInputError):
        load(path, protocol)


@pytest.mark.parametrize("explore_s", [2.0, 0.0])  # 0: skip BFS (invariant, then BMC)
def test_complete_check_finds_the_deep_bug(explore_s: float) -> None:
    result = check_complete(pipeline("release-early"), {"Req": 2, "Page": 2}, explore_s=explore_s)
    assert result.verdict == "violated"
    assert result.depth == 9  # deeper than the variant's bmc_depth (6)
    assert result.trace is not None and result.trace.violated == "no_stray_write"


@pytest.mark.parametrize("explore_s", [2.0, 0.0])
def test_complete_check_holds_for_the_fix(explore_s: float) -> None:
    result = check_complete(pipeline("release-waits"), {"Req": 2, "Page": 3}, explore_s=explore_s)
    assert result.verdict == "holds", result.summary
    assert result.method == ("explore" if explore_s else "invariant")


def test_no_vars_is_bad_input() -> None:
    protocol = dataclasses.replace(pipeline("release-waits"), vars=())
    with pytest.raises(KvproofInputError, match="no Vars"):
        infer(protocol)


def test_templates_too_large_is_bad_input() -> None:
    protocol = pipeline("release-waits")
    sizes = {"Req": 2, "Page": 2}
    with pytest.raises(KvproofInputError, match="candidate clauses"):
        candidates(
            protocol,
            Concrete(Instance(protocol, sizes)),
            sample_states(protocol, sizes),
            Templates(max_candidates=1),
        )


def test_cli_prove_infers_and_check_complete(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "inv.json"
    code = main(["prove", "release-waits", "--protocol", SPEC, "--json", "--save", str(out)])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["proved"]
    assert data["inferred"][0]["text"].startswith("forall r0: Req, p0: Page.")
    assert main(["prove", "release-waits", "--protocol", SPEC, "--strengthening", str(out)]) == 0
    capsys.readouterr()
    code = main(
        [
            "check",
            "release-early",
            "--protocol",
            SPEC,
            "--complete",
            "--requests",
            "2",
            "--pages",
            "2",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert data["verdict"] == "holds"  # BMC to bmc_depth 6 misses it ...
    assert data["complete"]["verdict"] == "violated" and data["complete"]["depth"] == 9
