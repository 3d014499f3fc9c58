"""The engine-neutral core of ``kvproof conform`` (``checker/conform/``): walks that cover
the model, the exact diagnosis, ``ConformRun`` as JSON and text, and ``--all``.

Runs on the cached 0.5.22 wheel; skips with the reason when it is unavailable.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from release_copy import copy_release, tree

from kvproof.checker.cli import main
from kvproof.checker.conform.diagnose import conforms_under, flipped, flips, rigid_values
from kvproof.checker.upstream.run import conform
from kvproof.spec.variant import load_variant

DEFERRED = "SGLANG_DISAGGREGATION_DEFERRED_DECODE_KV_RELEASE"


def _planted(dest: Path, rel: str, old: str, new: str) -> Path:
    """The files conform loads real, copied from 0.5.22, with one text patch."""
    copy_release("0.5.22", dest)
    path = dest / rel
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))
    return dest


def test_the_default_run_covers_the_model_with_few_trivial_walks() -> None:
    tree("0.5.22")
    run = conform(load_variant("sglang-0.5.22-pd"), "0.5.22", traces=200)
    assert run.exit_code == 0 and run.faults  # faults are on by default
    assert run.coverage is not None and run.coverage.reachable > 20
    assert run.coverage.ratio >= 0.9, run.coverage.missing
    assert run.trivial <= run.walks // 10
    # Every kind of decision, commits under faults included, in one default run.
    assert all(run.decisions[k] > 0 for k in ("held", "released", "aborted", "committed"))
    kinds = {"arrive", "alloc", "send", "post", "land", "done", "fail", "p_abort", "abort",
             "abort_seen", "ack", "timeout", "give_up", "commit"}  # fmt: skip
    assert kinds <= set(run.events), kinds - set(run.events)


def test_without_faults_the_reachable_set_is_smaller() -> None:
    tree("0.5.22")
    on = conform(load_variant("sglang-0.5.22-pd"), "0.5.22", traces=20)
    off = conform(load_variant("sglang-0.5.22-pd"), "0.5.22", traces=20, faults=False)
    assert on.coverage and off.coverage
    assert off.coverage.reachable < on.coverage.reachable


def test_a_planted_early_free_is_diagnosed_as_release_immediate(tmp_path: Path) -> None:
    """The cause is known: ``pop_transferred`` frees a failed/aborted transfer at once.
    The switch named must be the one whose flip makes the whole trace conform."""
    planted = _planted(
        tmp_path,
        "sglang/srt/disaggregation/decode.py",
        "if requires_host_drain or (\n                    deferrable and "
        "decode_req.kv_receiver.abort_notified\n                ):",
        "if False:",
    )
    variant = load_variant("sglang-0.5.22-pd")
    run = conform(variant, str(planted), traces=200, out=tmp_path / "out")
    assert run.exit_code == 1 and run.diagnosis is not None
    assert run.switch == "release"
    assert ("release", "immediate") in run.diagnosis.explained_by
    assert "frees r" in run.diagnosis.headline and "`immediate`" in run.diagnosis.headline
    header = json.loads(Path(run.files[0]).read_text().splitlines()[0])
    assert {"switch": "release", "value": "immediate"} in header["meta"]["explained_by"]


def test_the_named_flip_is_exact_and_others_are_not(tmp_path: Path) -> None:
    """Re-run the divergent walk by hand: under each named flip it conforms, under the
    variant's own switches it does not."""
    from kvproof.checker.conform.coverage import Guide, reachable
    from kvproof.checker.conform.model_side import requests_of
    from kvproof.checker.conform.run import Options, allowed_actions
    from kvproof.checker.conform.walk import walk
    from kvproof.checker.upstream.engine import open_sglang
    from kvproof.model.handoff import protocol_of
    from kvproof.model.lang.concrete import Concrete
    from kvproof.model.lang.instance import Instance

    tree("0.5.22")
    variant = load_variant("sglang-pd-early-free-abort")
    with open_sglang(variant, "0.5.22", {DEFERRED: True}) as engine:
        concrete = Concrete(Instance(protocol_of(variant), dict(engine.sizes)))
        allowed = allowed_actions(Options().faults)
        guide = Guide(concrete, reachable(concrete, allowed), 0)
        res = None
        for _ in range(200):
            init = guide.initial()
            res = walk(concrete, init, engine.harness(requests_of(concrete, init)), guide,
                       allowed=allowed, max_steps=30)  # fmt: skip
            if res.diverged:
                break
        assert res is not None and res.diverged
        rigid, sizes = rigid_values(concrete, res.init), dict(engine.sizes)
        named = [
            (s, v) for s, v in flips(variant.switches)
            if conforms_under(engine, flipped(variant, sizes, s, v), rigid, res.moves)
        ]  # fmt: skip
        # The code holds the pages until the ACK or its deadline: both deferred values
        # explain it (and only flips whose replay conforms are named at all).
        assert {("release", "deferred_ack"), ("release", "deferred_timeout")} <= set(named)
        assert ("release", "immediate") not in named
        assert not conforms_under(engine, concrete, rigid, res.moves)


def test_conform_run_json_and_text(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tree("0.5.22")
    rc = main(["conform", "sglang-pd-early-free-abort", "--sglang", "0.5.22", "--traces", "50",
               "--json", "--quiet", "--out", str(tmp_path)])  # fmt: skip
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 == doc["exit_code"] and doc["verdict"] == "conforms"
    assert doc["engine"] == "sglang" and doc["release"] == "0.5.22" == doc["sglang"]
    assert doc["coverage"]["reachable"] >= doc["coverage"]["exercised"] > 0
    assert doc["faults"] is True and doc["diagnosis"] is None
    rc = main(["conform", "sglang-0.5.19-pd", "--sglang", "0.5.22", "--traces", "50",
               "--quiet", "--out", str(tmp_path)])  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 1 and "DIVERGES" in text and "coverage:" in text and "switch `" in text
    assert all(len(line) <= 100 for line in text.splitlines())


def test_a_bad_out_is_refused_before_any_walk(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["conform", "sglang-0.5.22-pd", "--out", str(blocker / "sub")]) == 2
    assert "--out" in capsys.readouterr().err


@pytest.mark.slow
def test_all_writes_the_release_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvproof.checker.distrib.executor import SerialExecutor
    from kvproof.checker.upstream import matrix

    tree("0.5.22")
    tree("0.5.19")
    few = [c for c in matrix.cells() if c.variant in ("sglang-0.5.22-pd", "sglang-0.5.19-pd")]
    monkeypatch.setattr(matrix, "cells", lambda: iter(few))
    m = matrix.conform_all(20, 0, SerialExecutor())
    table = matrix.release_table(m)
    assert "sglang-0.5.22-pd" in table["0.5.22"] and "sglang-0.5.19-pd" in table["0.5.19"]
    assert m.exit_code == 0
    text = matrix.markdown(m)
    assert "| 0.5.22 |" in text and "`sglang-0.5.19-pd`" in text
    assert json.dumps(m.to_json())  # plain data
