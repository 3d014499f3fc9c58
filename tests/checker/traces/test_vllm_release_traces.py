"""The counterexamples of vLLM 0.34.0's NIXL variants (issue 40) on the reference engine:
the push lasso for ``pages_return`` repeats there (the page is never returned), and
``kvproof report --html`` draws every one of them, the lassos with their loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.traces.corpus import TRACES_DIR
from kvproof.checker.traces.tracefile import read_jsonl
from kvproof.spec.variant import load_variant

LASSOS = sorted((TRACES_DIR / "lasso").glob("vllm-0.34-nixl-push.pages_return*.jsonl"))
DRAWN = [*LASSOS, *sorted(TRACES_DIR.glob("vllm-0.34-nixl-*.isolation.jsonl"))]


def test_both_lassos_and_both_stale_reads_are_stored() -> None:
    assert len(LASSOS) == 2 and len(DRAWN) == 4


@pytest.mark.slow  # torch: the engine
@pytest.mark.parametrize("path", LASSOS, ids=lambda p: p.stem)
def test_the_push_lasso_repeats_on_the_engine(path: Path) -> None:
    from kvproof.checker.conformance.replay import replay_trace

    trace = read_jsonl(path)
    report = replay_trace(trace, load_variant(trace.variant), loops=2)
    assert report.divergence is None, report.divergence
    assert report.lasso is not None and report.lasso.repeats and report.exit_code == 1
    assert report.lasso.forever == ("page p0 is never returned (r0 holds it)",)


@pytest.mark.slow  # torch: the engine replays each trace for the report
@pytest.mark.parametrize("path", DRAWN, ids=lambda p: p.stem)
def test_report_html_draws_each(path: Path, tmp_path: Path) -> None:
    out = tmp_path / f"{path.stem}.html"
    assert main(["report", str(path), "--html", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "<svg" in html and "vllm-0.34-nixl-" in html
    if "lasso" in path.parts:
        assert "forever" in html
