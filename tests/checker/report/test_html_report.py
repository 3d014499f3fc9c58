"""The HTML report's markup (no browser): what it shows, that it is self-contained, bad input.

The browser tests (``test_report_browser.py``) open the same files in Chromium.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.render.prove_html import clauses
from kvproof.checker.report.html_page import mark_canaries, trace_page
from kvproof.checker.report.msc import LANES, visible_steps
from kvproof.checker.report.trace_view import build
from kvproof.checker.traces.tracefile import read_jsonl
from kvproof.model.handoff import build_handoff
from kvproof.model.lang.instance import ActionInstance
from kvproof.spec.variant import load_variant

ROOT = Path(__file__).resolve().parents[3]
INCIDENT = ROOT / "traces" / "sglang-0.5.19-pd.isolation.jsonl"


@pytest.fixture(scope="module")
def incident() -> tuple:
    trace = read_jsonl(INCIDENT)
    variant = load_variant(trace.variant)
    return trace, variant, build_handoff(variant.switches)


def test_view_finds_the_violating_step_and_the_stale_page(incident: tuple) -> None:
    trace, _, protocol = incident
    view = build(trace, protocol)
    assert view.violated == "isolation" and view.violated_step == len(trace.steps)
    assert view.placeholders == (0,)
    commit = view.steps[-1]
    assert commit["action"] == "commit"
    from kvproof.checker.report.trace_view import reads

    # the placeholder wrote one page: one slot of the placeholder's KV, the rest prefill's
    # leftovers, so decode's read of it is stale (issue 12 item 3)
    assert sorted(reads(view, commit)) == [(0, True)]
    assert "prefill's leftovers" in view.explanation


def test_page_has_lanes_highlight_stale_cell_and_no_network(incident: tuple) -> None:
    trace, variant, protocol = incident
    rows = [
        {
            "request": 0,
            "tenant": "t0",
            "status": 200,
            "text": "~CANARY-W-5M8R3T  ",
            "reason": "",
            "single_node": "the quick",
            "tokens_match": False,
            "canaries": [["warmup", "CANARY-W-5M8R3T"]],
            "foreign": ["warmup"],
        }
    ]
    html = trace_page(trace, protocol, variant=variant, responses=rows)
    for lane in LANES:
        assert f'data-lane="{lane}"' in html
    assert re.search(r'class="msg violation[^"]*" data-step="7"', html)
    assert 'class="cell owned stale' in html and "STALE read" in html
    assert 'class="canary foreign"' in html and "✖ LEAK" in html
    assert "HTTP 200" in html
    assert "prefers-color-scheme: dark" in html and "@media print" in html
    # self-contained: no script, stylesheet, image or font is fetched
    assert "<script" not in html and "<link" not in html and "<img" not in html
    assert not re.search(r"""(src|href)=["']?(?!https://github.com/)[a-z]+://""", html)
    assert "url(http" not in html
    for source in variant.sources:
        if source.startswith("https://"):
            assert f'href="{source}"' in html


def test_canary_marking_escapes_html() -> None:
    out = mark_canaries("<b>x</b> CAN-1 y", [("B", "CAN-1")], own="A")
    assert out.startswith("&lt;b&gt;x&lt;/b&gt; ") and 'data-tenant="B"' in out
    assert "⚑ foreign (tenant B)" in out
    assert "flag" in mark_canaries("CAN-1", [("A", "CAN-1")], own="A")


def test_long_trace_is_folded_around_the_violating_step(incident: tuple) -> None:
    trace, _, protocol = incident
    long = dataclasses.replace(trace, steps=trace.steps + (ActionInstance("step", (0,)),) * 300)
    view = build(long, protocol)
    assert view.violated_step == 7
    shown = visible_steps(len(long.steps), view.violated_step)
    assert None in shown and 8 in shown and len(shown) < 200
    html = trace_page(long, protocol)
    assert "steps folded around the violating step" in html
    assert html.count('class="msg') < 200


def test_clauses_read_as_logic() -> None:
    protocol = build_handoff(load_variant("sglang-0.5.22-pd").switches)
    text = dict((inv.name, c) for inv, c in clauses(protocol))
    assert text["one_owner"] == "∀ p, r, r2: (owns(r, p) ∧ owns(r2, p)) → r = r2"
    assert text["inflight_held"] == "∀ r, p: inflight(r, p) → dphase(r) ∈ {transfer, draining}"
    assert len(text) == len(protocol.safety) + len(protocol.strengthening)


def test_check_html_writes_one_report_per_violation_without_torch(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = (
        "import sys; from kvproof.checker.cli import main; "
        f"rc = main(['check', 'sglang-0.5.19-pd', '--requests', '1', '--pages', '2', "
        f"'--depth', '8', '--no-prove', '--invariant', 'isolation', '--html', {str(out)!r}]); "
        "assert 'torch' not in sys.modules, 'check imported torch'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    html = (out / "sglang-0.5.19-pd.isolation.html").read_text(encoding="utf-8")
    assert "STALE read" in html and "⚠ violates isolation" in html and "HTTP 200" in html


def test_prove_and_explore_html(tmp_path: Path) -> None:
    proof = tmp_path / "proof.html"
    assert main(["prove", "sglang-pd-early-free-abort", "--html", str(proof)]) == 1
    text = proof.read_text(encoding="utf-8")
    assert "NOT PROVED" in text and 'class="failed-clause"' in text and "post-state" in text
    graph = tmp_path / "graph.html"
    args = ["explore", "sglang-0.5.19-pd", "--requests", "1", "--pages", "1", "--html"]
    assert main([*args, str(graph)]) == 1
    svg = graph.read_text(encoding="utf-8")
    assert '<svg class="graph"' in svg and 'class="node violated"' in svg


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "no-such.jsonl", "--html", "{tmp}/r.html"],
        ["report", str(INCIDENT), "--html", "{file}/under-a-file/r.html"],
        ["report", str(INCIDENT), "--html", "{tmp}"],
        ["check", "sglang-0.5.19-pd", "--html", "{file}"],
        ["prove", "sglang-0.5.22-pd", "--html", "{file}/under-a-file/p.html"],
        ["explore", "sglang-0.5.19-pd", "--html", "{tmp}"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    afile = tmp_path / "a-file"
    afile.write_text("x")
    argv = [a.format(tmp=tmp_path, file=afile) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kvproof: error:") and "\n" not in err


def test_output_path_is_checked_before_the_trace(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    # A path below a file can never be written: refused before the trace is even read.
    (tmp_path / "nope").write_text("x")
    assert main(["report", "no-such.jsonl", "--html", str(tmp_path / "nope" / "r.html")]) == 2
    assert "--html" in capsys.readouterr().err


def test_unreadable_trace(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kvproof_trace": 1\n')
    assert main(["report", str(bad), "--html", str(tmp_path / "r.html"), "--no-replay"]) == 2
    assert "malformed JSON" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.slow  # imports torch and runs the engine
def test_report_replays_and_marks_the_foreign_canary(tmp_path: Path) -> None:
    out = tmp_path / "incident.html"
    assert main(["report", str(INCIDENT), "--html", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "LEAK on the engine" in html and 'class="canary foreign"' in html
    assert "single-node engine" in html and "tokens differ" in html


def test_fuzz_html_writes_the_finding_with_the_engine_side(tmp_path: Path) -> None:
    from kvproof.checker.runs.fuzz_run import write_fuzz_html

    trace = read_jsonl(ROOT / "traces" / "sglang-pd-early-free-abort.no_stray_write.jsonl")
    variant = load_variant(trace.variant)
    path = write_fuzz_html(tmp_path / "fz", variant, trace, seed=7)
    assert path.name == f"{variant.name}.fuzz-7.html"
    html = path.read_text(encoding="utf-8")
    assert "STRAY write" in html and "Engine side" in html and "aborted" in html


def test_report_reads_itf_traces(tmp_path: Path, incident: tuple) -> None:
    from kvproof.checker.traces.itf import write_itf

    trace, _, protocol = incident
    itf = tmp_path / "incident.itf.json"
    write_itf(trace, itf, protocol)
    out = tmp_path / "itf.html"
    assert main(["report", str(itf), "--no-replay", "--html", str(out)]) == 0
    html = out.read_text(encoding="utf-8")
    assert "STALE read" in html and "Engine side" not in html
