"""Findings say what they are: engine crashes are findings, "leak" means foreign KV, an
inconclusive probe is never clean, and ``fuzz`` reports the model's finding first."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from kvproof.checker.cli import main
from kvproof.checker.conformance.fuzz import COUNTERS
from kvproof.checker.conformance.replay import ReplayReport, replay_trace
from kvproof.checker.report.replay_text import failure_summary
from kvproof.checker.traces.tracefile import read_jsonl
from kvproof.model.lang.trace import Trace
from kvproof.refimpl.cluster import Cluster
from kvproof.spec.variant import load_variant

ROOT = Path(__file__).resolve().parents[3]
INCIDENT = ROOT / "traces" / "sglang-0.5.19-pd.isolation.jsonl"


def commits_too_early(variant: Any, **kw: Any) -> Cluster:
    """A planted engine bug: decode asserts at commit (as an engine whose decode commits
    before the transfer concluded trips its own assertion)."""
    c = Cluster(variant, **kw)
    rule = c.handoff.rules["commit"]

    def commit(ctx: Any, f: Any, ev: Any) -> None:
        if ev.rid >= 1:  # engine request 0 is the replay's warm-up (canary) request
            raise AssertionError("decode committed before the transfer concluded")
        rule.effect(ctx, f, ev)

    c.handoff.rules["commit"] = dataclasses.replace(rule, effect=commit)
    return c


def test_engine_crash_under_replay_is_a_finding() -> None:
    report = replay_trace(
        read_jsonl(INCIDENT), load_variant("sglang-0.5.19-pd"), engine=commits_too_early
    )
    assert report.crash is not None and "AssertionError" in report.crash
    assert "commit" in report.crash and report.exit_code == 1
    assert "crashed" in failure_summary(report)


def test_engine_crash_under_fuzz_is_a_shrunk_finding() -> None:
    from kvproof.checker.conformance.fuzz import fuzz

    result = fuzz(load_variant("sglang-0.5.22-pd"), traces=60, seed=0, engine=commits_too_early)
    f = result.finding
    assert f is not None and f.kind == "crash" and "AssertionError" in f.detail
    assert f.trace.steps[-1].action == "commit" and result.exit_code == 1
    assert result.stats.crashes == 1


def test_leak_only_for_foreign_kv() -> None:
    trace = Trace("sglang-0.5.19-pd", {"Req": 1, "Page": 1}, {}, ())
    report = ReplayReport("sglang-0.5.19-pd", trace, engine_violations=[(7, "reject_final")])
    assert not report.leak and report.exit_code == 1
    text = failure_summary(report)
    assert "reject_final" in text and "leak" not in text


def test_fuzz_reports_the_model_finding_then_the_engine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fuzz", "sglang-0.5.19-pd", "--out", str(tmp_path), "--json"]) == 1
    row = json.loads(capsys.readouterr().out)
    f = row["finding"]
    assert f["source"] == "model" and f["engine"]["confirmed"] is True
    assert Path(f["trace"]).is_file() and read_jsonl(Path(f["trace"])).steps
    # The engine's replay shows a real canary: the finding counts as a leak.
    assert (f["kind"], f["shows"], f["engine"]["shows"]) == ("leak", "leak", "leak")
    assert f["engine"]["leak"] is True
    assert [row[k] for k in COUNTERS.values()] == [0, 1, 0, 0, 0]


def test_probe_out_of_budget_is_inconclusive(capsys: pytest.CaptureFixture[str]) -> None:
    from kvproof.ops.serve.config import ServeConfig
    from kvproof.ops.serve.server import BackgroundServer

    with BackgroundServer(ServeConfig.for_variant("sglang-0.5.19-pd")) as srv:
        code = main(["probe", srv.url, "--max-requests", "3", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert (code, report["verdict"]) == (1, "inconclusive") and report["findings"] == []
