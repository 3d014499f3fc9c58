"""A counterexample is replayed once, where the search re-checks it (issue #42): the
``--json`` document, the text report, the JUnit and SARIF reports, the trace files and the
HTML pages all draw from the states it carries."""

from __future__ import annotations

import importlib
import io
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from kvproof.checker.render.check import render
from kvproof.checker.runs.check_run import CheckOptions, check
from kvproof.model.lang import trace as trace_module

# Every module that replays a trace (by the name it imported): loaded before the count.
REPLAYERS = (
    "kvproof.checker.render.check_json",
    "kvproof.checker.render.check_files",
    "kvproof.checker.render.check_gate",
    "kvproof.checker.report.html_page",
    "kvproof.checker.report.trace_view",
    "kvproof.checker.traces.itf",
    "kvproof.checker.traces.tracefile",
    "kvproof.checker.verify.liveness",
    "kvproof.model.search.bmc",
    "kvproof.model.search.lasso",
)


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The traces replayed from now on, one entry per replay, wherever it is asked for."""
    real = trace_module.replay
    seen: list[Any] = []

    def counting(trace: Any, concrete: Any) -> Any:
        seen.append(trace)
        return real(trace, concrete)

    for name in REPLAYERS:
        importlib.import_module(name)
    patched = 0
    for module in list(sys.modules.values()):
        if getattr(module, "replay", None) is real and module.__name__.startswith("kvproof"):
            monkeypatch.setattr(module, "replay", counting)
            patched += 1
    assert patched >= len(REPLAYERS) - 2  # html_page and check_gate only reach it through others
    return seen


def _once_each(seen: list[Any], shown: list[Any]) -> None:
    assert shown, "nothing to count: the check found no counterexample"
    for trace in shown:
        assert sum(1 for s in seen if s == trace) == 1, trace.violated
    # and no other trace was replayed twice either (a discarded, non-primary one included)
    assert all(seen[i] != seen[j] for i in range(len(seen)) for j in range(i))


def test_each_counterexample_is_replayed_once_for_every_output(
    tmp_path: Path, replays: list[Any]
) -> None:
    options = CheckOptions(
        requests=2,
        pages=3,
        depth=6,
        prove="never",
        workers=1,
        out=tmp_path / "traces",
        html=tmp_path / "html",
        junit=tmp_path / "junit.xml",
        sarif=tmp_path / "check.sarif",
    )
    run = check(["sglang-0.5.19-pd"], options=options)
    for as_json in (False, True):
        render(Console(file=io.StringIO()), run, as_json=as_json)
    assert run.to_json()["verdict"] == "violated"
    (verdict,) = run.variants
    shown = [r.trace for r in verdict.bmc.results if r.trace is not None]
    _once_each(replays, shown)
    kinds = {f.suffix for f in run.files}
    assert {".jsonl", ".json", ".html", ".xml", ".sarif"} <= kinds


def test_a_fair_lasso_is_replayed_once(tmp_path: Path, replays: list[Any]) -> None:
    options = CheckOptions(
        invariants=("answered",), necessity=False, out=tmp_path, html=tmp_path, workers=1
    )
    run = check(["sglang-pd-quarantine"], options=options)
    render(Console(file=io.StringIO()), run, as_json=False)
    assert run.to_json()["liveness"]["verdict"] == "violated"
    (verdict,) = run.variants
    assert verdict.liveness is not None
    shown = [r.trace for r in verdict.liveness.result.results if r.trace is not None]
    _once_each(replays, shown)
