"""The runs as library calls (issue #26 item 2): ``check()`` and ``fuzz_variant()`` return a
run with its results, its files, ``to_json()`` and ``exit_code``; nothing here calls ``main``."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.runs.check_run import CheckOptions, CheckRun, check
from kvproof.checker.runs.progress import Progress, Reporter
from kvproof.spec.variant import load_variant


def _variant_run(*, matches: bool, violated: bool, complete: str | None, expect: str) -> Any:
    """A verdict on invariant ``inv`` expected to ``expect``: BMC found it ``violated``
    or not, ``matches`` its expectation or not, and the complete search said ``complete``."""
    from kvproof.checker.verify.verdict import CompleteRun, VariantVerdict
    from kvproof.model.lang.trace import Trace
    from kvproof.model.search.bmc import BmcResult, InvariantResult
    from kvproof.model.search.complete import CompleteResult

    holds = not violated
    got = "holds" if holds else "violated"
    want = got if matches else ("violated" if holds else "holds")
    variant = dataclasses.replace(load_variant("sglang-0.5.19-pd"), expect={"inv": want})
    if complete is not None:  # the complete search's counterexample is to ``expect``'s
        variant = dataclasses.replace(variant, expect={"inv": want, "other": expect})
    bmc = BmcResult("v", {}, 1, (InvariantResult("inv", holds, 1),), 0.0)
    done = None
    if complete is not None:
        trace = Trace("v", {}, {}, (), violated="other")
        done = CompleteRun("requested", CompleteResult(complete, {}, "bmc", 0.0, trace=trace))
    from kvproof.checker.verify.protocols import protocol_for

    return VariantVerdict(variant, protocol_for(variant), invariants=bmc, complete=done)


def test_the_all_rule_counts_a_complete_counterexample_to_an_expected_hold() -> None:
    ok = _variant_run(matches=True, violated=False, complete=None, expect="holds")
    expected_bug = _variant_run(matches=True, violated=True, complete="violated", expect="violated")
    surprise = _variant_run(matches=True, violated=False, complete="violated", expect="holds")
    assert CheckRun((ok, expected_bug), gate=True).exit_code == 0
    assert CheckRun((ok, surprise), gate=True).exit_code == 1
    # Without --all, any violation (BMC's, the proof's or the complete search's) is exit 1.
    assert CheckRun((ok,)).exit_code == 0
    assert CheckRun((surprise,)).exit_code == 1
    assert CheckRun((expected_bug,)).exit_code == 1
    mismatch = _variant_run(matches=False, violated=False, complete=None, expect="holds")
    assert CheckRun((ok, mismatch), gate=True).exit_code == 1
    assert CheckRun((mismatch,)).exit_code == 0  # nothing violated


def test_the_json_is_one_object_for_one_variant_and_a_list_otherwise() -> None:
    one = _variant_run(matches=True, violated=False, complete=None, expect="holds")
    assert CheckRun((one,)).to_json()["variant"] == "sglang-0.5.19-pd"
    assert [d["variant"] for d in CheckRun((one,), gate=True).to_json()] == ["sglang-0.5.19-pd"]
    assert len(CheckRun((one, one)).to_json()) == 2


@pytest.mark.slow  # BMC of one buggy variant
def test_check_returns_the_run_with_its_files_and_progress(tmp_path: Path) -> None:
    calls: list[tuple[str, Any]] = []

    class Heard(Reporter):
        def stage(self, variant: str, stage: str, detail: str = "") -> None:
            calls.append(("stage", (variant, stage)))

        def done(self, variant: str, outcome: str, *, advance: int = 1) -> None:
            calls.append(("done", (variant, outcome)))

    @contextlib.contextmanager
    def heard(what: str, total: int | None) -> Iterator[Reporter]:
        calls.append(("open", (what, total)))
        yield Heard()

    options = CheckOptions(requests=2, pages=3, depth=6, prove="never", out=tmp_path)
    run = check(["sglang-0.5.19-pd"], options=options, progress=Progress(open=heard))
    assert calls[0] == ("open", ("checking variants", 1))
    assert ("stage", ("sglang-0.5.19-pd", "bmc")) in calls
    assert calls[-1][0] == "done" and calls[-1][1][0] == "sglang-0.5.19-pd"
    assert run.exit_code == 1  # the buggy variant's violation
    doc = run.to_json()
    assert doc["variant"] == "sglang-0.5.19-pd" and doc["verdict"] == "violated"
    assert doc["files"] == [str(f) for f in run.files] and run.files
    assert all(f.exists() and f.parent == tmp_path for f in run.files)


@pytest.mark.slow  # the engine confirms the model's finding (torch)
def test_fuzz_hands_over_the_model_finding_before_the_engine_confirms(tmp_path: Path) -> None:
    from kvproof.checker.runs.fuzz_run import FuzzOptions, fuzz_variant

    seen: list[Path] = []
    variant = load_variant("sglang-pd-early-free-abort")
    run = fuzz_variant(
        variant,
        FuzzOptions(faults=True, out=tmp_path),
        on_model_finding=lambda found, saved: seen.append(saved),
    )
    assert run.model is not None and seen == [run.trace_file] and run.files == (run.trace_file,)
    doc = run.to_json()
    assert doc["finding"]["source"] == "model" and "ray" not in doc
    assert doc["finding"]["engine"]["confirmed"] is run.model.confirmed
    assert run.exit_code == 1
