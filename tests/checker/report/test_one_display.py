"""One display of requests and pages (r0, p0): check's traces, prove's CTI, fuzz findings,
the engine's events and the HTML report's legend all say ``land(r0, p0)``."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from kvproof.checker.render.prove import render_proof
from kvproof.checker.report.html_page import trace_page
from kvproof.checker.report.trace_view import build
from kvproof.checker.traces.tracefile import read_jsonl
from kvproof.model.handoff import protocol_of
from kvproof.model.lang.explain import action_label
from kvproof.model.lang.instance import ActionInstance
from kvproof.model.search.induction import prove
from kvproof.refimpl.events import Event
from kvproof.spec.variant import load_variant

TRACES = Path(__file__).parents[3] / "traces"
INCIDENT = load_variant("sglang-0.5.19-pd")


def test_engine_events_and_model_actions_print_alike() -> None:
    protocol = protocol_of(INCIDENT)
    assert str(Event("alloc", 1, 2)) == "alloc(r1, p2)" and str(Event("send", 0)) == "send(r0)"
    assert action_label(protocol, ActionInstance("alloc", (1, 2))) == "alloc(r1, p2)"


def test_cti_names_request_and_page_and_has_no_empty_header() -> None:
    protocol = protocol_of(INCIDENT)
    result = prove(protocol, timeout_ms=20_000)
    assert result.cti is not None and result.cti.action is not None
    shown = result.cti.describe()["action"]
    # The CTI's action prints as every display prints it: r0 for a request, p0 for a page.
    assert shown == action_label(protocol, result.cti.action)
    assert shown.startswith(result.cti.action.action + "(r")
    assert (", p" in shown) == (len(result.cti.action.args) == 2)
    buf = io.StringIO()
    render_proof(Console(file=buf, width=200), "x", result)
    lines = buf.getvalue().splitlines()
    assert any(shown in line for line in lines) and f"after {shown}" in result.summary
    # no header row of empty cells between the title and the first row
    assert not any(set(line) <= set("┃ ") and "┃" in line for line in lines)


def test_report_legend_badge_is_the_traces_own_step() -> None:
    # Traces already on disk still load, and their report marks their own step.
    for path in sorted(TRACES.glob("sglang-0.5.19-pd.*.jsonl")):
        trace = read_jsonl(path)
        protocol = protocol_of(INCIDENT)
        step = build(trace, protocol).violated_step
        page = trace_page(trace, protocol, variant=INCIDENT)
        assert step and f'<span class="swatch">⚠ {step}</span>' in page
        assert '<span class="swatch">⚠ 8</span>' not in page or step == 8
