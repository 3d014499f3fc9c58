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
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.instance import Instance
from kvproof.model.search.candidates import Templates, candidates
from kvproof.model.search.complete import check_complete
from kvproof.model.search.induction import prove
from kvproof.model.search.infer import infer, load, sample_states, save, with_strengthening
from kvproof.spec.errors import KvproofInputError

SPEC = str(Path(__file__).resolve().parents[3] / "examples/deep_bug/pipeline.py") + ":Pipeline"


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
    from kvproof.model.search.candidates import Evaluator

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
    # the step that broke it, from a state of every surviving candidate, re-run concretely
    assert result.cti is not None and result.cti["conjunct"] == "no_stray_write"
    assert result.cti["changes"] and result.cti["action"]
    assert json.loads(json.dumps(result.to_json()))["cti"] == result.cti


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


# -- the custom protocol example, the handoff's fixed variants, the CLI's bad input --------

CUSTOM = (
    str(Path(__file__).resolve().parents[3] / "examples/custom_protocol/my_handoff.py") + ":Handoff"
)


def custom(name: str) -> Protocol:
    from kvproof.checker.verify.protocols import protocol_for

    user = load_protocol(CUSTOM)
    (variant,) = resolve_variants([name], False, None, user)
    return protocol_for(variant, user.factory)


@pytest.mark.slow
def test_custom_protocol_without_its_strengthening_is_reproved() -> None:
    protocol = custom("deferred-ack")
    assert protocol.strengthening  # it brings the hand-written one: inference ignores it
    result = infer(protocol)
    assert result.proved, result.summary
    assert result.proof is not None and result.proof.proved
    # the proof is induction.prove's, with exactly the inferred conjuncts
    assert len(result.proof.conjuncts) == len(protocol.safety) + len(result.inferred)
    assert prove(with_strengthening(protocol, result.inferred)).proved


@pytest.mark.slow
def test_custom_protocol_example_script(capsys: pytest.CaptureFixture[str]) -> None:
    """``examples/custom_protocol/reprove_by_inference.py``: the fix proved, the bug not."""
    import runpy

    script = Path(CUSTOM.split(":")[0]).parent / "reprove_by_inference.py"
    assert runpy.run_path(str(script))["main"]() == 0
    out = capsys.readouterr().out
    assert "deferred-ack: proved for all numbers of requests and pages" in out
    assert "early-free-unposted: inference did not prove it: safety inflight_pages_held" in out


def test_symbolic_houdini_takes_over_when_the_finite_set_is_not_inductive_for_all_sizes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A closure inductive only on the finite instance (here: forced to keep just safety)
    fails the prover; Houdini over uninterpreted sorts then finds what the proof needs."""
    import kvproof.model.search.infer as infer_mod

    real = infer_mod.small_inductive

    def safety_only(*args, **kw):  # type: ignore[no-untyped-def]
        closure = real(*args, **kw)
        return dataclasses.replace(closure, kept=[c for c in closure.kept if c.safety])

    monkeypatch.setattr(infer_mod, "small_inductive", safety_only)
    result = infer(pipeline("release-waits"))
    assert result.proved, result.summary
    assert "houdini_symbolic" in result.timeline
    assert result.inferred  # the symbolic Houdini's conjuncts, proved by the prover


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    sorted(
        v.name
        for v in __import__("kvproof.spec.variant").spec.variant.list_variants()
        if not v.buggy
    ),
)
def test_prove_infer_proves_each_fixed_variant(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prove", name, "--infer", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["proved"] and data["inferred"]
    assert data["inference"]["timeline"]["proof"] > 0  # induction.prove ran on them


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--infer-literals", "9"], "--infer-literals: must be 1..6, got 9"),
        (["--infer-vars", "4"], "--infer-vars: must be 1..3, got 4"),
        (["--infer-literals", "0"], "argument --infer-literals"),
        (["--infer-vars", "3", "--budget", "0.5"], "lower --infer-vars or raise --budget"),
    ],
)
def test_bad_inference_options_are_exit_2(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["prove", "sglang-0.5.22-pd", "--infer", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_protocol_without_vars_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(Path(SPEC.split(":")[0]).parent))
    (tmp_path / "novars.py").write_text(
        "import dataclasses\n"
        "import pipeline\n"
        "\n"
        "class NoVars(pipeline.Pipeline):\n"
        "    @staticmethod\n"
        "    def build(sw):\n"
        "        return dataclasses.replace(pipeline.build(sw), vars=())\n"
    )
    spec = f"{tmp_path / 'novars.py'}:NoVars"
    code = main(["prove", "release-waits", "--protocol", spec, "--infer"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "declares no Vars" in err and "Var(...)" in err and "\n" not in err
