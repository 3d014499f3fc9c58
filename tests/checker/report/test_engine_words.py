"""Counterexamples in engine words: no model field names where a person reads a verdict.

``check``'s text, ``replay``'s text and the HTML report tell each step as what the engines
did (``checker/report/engine_words.py``); the model's names (``owns(r0, p0): F->T``,
``over_p(r0)``, ``3 Req``) appear only under ``--raw`` (and in ``--json``).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
from rich.console import Console

from kvproof.checker.render.check_json import variant_json
from kvproof.checker.render.check_text import render_check
from kvproof.checker.report.engine_words import step_words, story, uses_model_names, voice_of
from kvproof.checker.report.html_page import trace_page
from kvproof.checker.report.trace_view import trace_rows
from kvproof.checker.traces.tracefile import read_jsonl as read_trace
from kvproof.checker.verify.driver import prepare, run_job
from kvproof.checker.verify.plan import CheckOptions, Phase
from kvproof.checker.verify.verdict import VariantVerdict
from kvproof.model.handoff import protocol_of
from kvproof.spec.variant import load_variant

ROOT = Path(__file__).resolve().parents[3]
CORPUS = sorted((ROOT / "traces").glob("*.jsonl"))


def test_the_detector_sees_model_names() -> None:
    assert uses_model_names("owns(r0, p0): F->T") == ["owns"]
    assert uses_model_names("dphase(r0): idle->queued; 3 Req / 6 Page") == [
        "dphase",
        "3 Req",
        "6 Page",
    ]
    assert uses_model_names("p0 holds KV of r0; isolation holds") == []


def _check(name: str) -> VariantVerdict:
    job, protocols = prepare(load_variant(name), CheckOptions(requests=2, pages=2, depth=8))
    return run_job(dataclasses.replace(job, phases=(Phase("bmc", 8),)), protocols)


def _text(check: VariantVerdict, raw: bool) -> str:
    out = io.StringIO()
    render_check(Console(file=out, width=120), check, variant_json(check), raw=raw)
    return out.getvalue()


def test_check_text_speaks_engine_words_unless_raw() -> None:
    check = _check("sglang-pd-early-free-abort")
    words = _text(check, raw=False)
    assert "decode freed page p0 at once and sent ABORT to prefill" in words
    assert "which decode had already freed" in words
    assert uses_model_names(words) == []
    assert "owns" in uses_model_names(_text(check, raw=True))


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_html_report_counterexample_has_no_model_names(path: Path) -> None:
    trace = read_trace(path)
    variant = load_variant(trace.variant)
    html = trace_page(trace, protocol_of(variant, assumed=False), variant=variant)
    body = html.split("</style>", 1)[1]
    # the variant box lists the switches by name: a configuration, not a counterexample line
    story_part = body.split('<section class="variant-section">', 1)[0]
    assert uses_model_names(story_part) == []
    assert '<ol class="engine-steps">' in story_part


def test_the_incident_told_in_two_sentences() -> None:
    trace = read_trace(ROOT / "traces" / "sglang-0.5.19-pd.isolation.jsonl")
    variant = load_variant(trace.variant)
    protocol = protocol_of(variant, assumed=False)
    rows = trace_rows(protocol, trace)
    said = step_words(rows, voice_of("sglang"))
    assert said[0].endswith("with a pending abort, and decode admitted it")
    told = story(rows, "decode read r0's page table.", voice_of("sglang"))
    assert told.count(". ") == 1 and told.endswith("Decode read r0's page table.")


def test_liveness_lassos_speak_engine_words_unless_raw() -> None:
    from kvproof.checker.render.check_json import liveness_json
    from kvproof.checker.render.check_text import render_liveness as render
    from kvproof.checker.verify.liveness import check_liveness
    from kvproof.checker.verify.protocols import protocol_for

    variant = load_variant("sglang-pd-early-free-abort")
    check = check_liveness(variant, protocol_for(variant, liveness=True), necessity=False)
    data = liveness_json(check)

    def text(raw: bool) -> str:
        out = io.StringIO()
        render(Console(file=out, width=120), check, data, raw=raw)
        return out.getvalue()

    words = text(False)
    assert "died and will never report" in words and "crash(r0)" not in words
    assert uses_model_names(words) == []
    assert "crash(r0)" in text(True)
