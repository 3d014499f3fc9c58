"""Replay of every stored counterexample: each shows on the buggy engine what its header
says (a leaked canary where the bug leaks), none on the fixed; and a deliberately broken
engine is caught even where the model says the variant holds."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from kvproof.checker.cli import main
from kvproof.checker.conformance.replay import replay_trace
from kvproof.checker.traces.corpus import TRACES_DIR, load
from kvproof.checker.traces.shows import CANNOT_LEAK, KINDS, LEAK
from kvproof.checker.traces.tracefile import read_jsonl
from kvproof.refimpl.cluster import Cluster
from kvproof.spec.variant import Variant, list_variants, load_variant

TRACES = load()
INCIDENT = TRACES_DIR / "sglang-0.5.19-pd.isolation.jsonl"
# Enough decode steps to echo two pages: a stale page at table index 0 or 1 is read whole.
TOKENS = 32


@pytest.mark.parametrize("name", sorted(TRACES))
def test_trace_shows_on_the_engine_what_its_header_says(name: str) -> None:
    trace = TRACES[name]
    report = replay_trace(trace, load_variant(trace.variant), max_new_tokens=TOKENS)
    assert report.divergence is None, report.divergence
    assert report.not_enabled is None and report.crash is None
    assert trace.violated in {inv for _, inv in report.engine_violations}
    assert report.exit_code == 1
    assert trace.meta.get("shows") in KINDS, "the header must say what the trace shows"
    assert report.shows == trace.meta["shows"], [r.text for r in report.responses]
    if trace.meta["shows"] == LEAK:
        # The engine's own output: a client's text holds another tenant's canary.
        leaked = report.canary_leaks
        assert leaked and all(
            r.status == 200 and r.tenant not in r.foreign_canaries for r in leaked
        )
    else:
        assert not report.leak


def test_every_buggy_variant_has_a_leak_trace_unless_it_cannot_leak() -> None:
    shown: dict[str, set[str]] = {}
    for trace in TRACES.values():
        shown.setdefault(trace.variant, set()).add(trace.meta["shows"])
    buggy = {v.name for v in list_variants() if v.buggy}
    assert buggy <= set(shown), "every buggy variant has a trace in traces/"
    for name in sorted(buggy):
        assert (LEAK in shown[name]) == (name not in CANNOT_LEAK), name


def test_drain_lets_the_victim_answer() -> None:
    """The counterexample stops at the victim's commit (1 token): only the drain lets it
    decode far enough for the foreign canary to show in its answer."""
    trace = TRACES["sglang-pd-early-free-abort.isolation"]
    variant = load_variant(trace.variant)
    cut = replay_trace(trace, variant, max_new_tokens=TOKENS, drain=False)
    assert not cut.leak and cut.shows != LEAK and not cut.drained
    full = replay_trace(trace, variant, max_new_tokens=TOKENS)
    assert full.leak and full.drained
    assert [r.foreign_canaries for r in full.canary_leaks] == [("t0",)]


@pytest.mark.parametrize("name", sorted(TRACES))
def test_fixed_counterpart_does_not_leak(name: str) -> None:
    trace = TRACES[name]
    fixed = load_variant(load_variant(trace.variant).counterpart or "sglang-0.5.22-pd")
    report = replay_trace(trace, fixed, max_new_tokens=TOKENS)
    assert report.divergence is None, report.divergence
    assert not report.leak and not report.wrong_answers and report.exit_code == 0
    assert all(r.status is not None for r in report.responses), "every client answered"


def test_cli_incident_buggy_and_fixed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(INCIDENT)]) == 1
    out = capsys.readouterr().out
    assert "LEAK" in out and "CANARY-W" in out
    assert main(["replay", str(INCIDENT), "--variant", "sglang-0.5.22-pd"]) == 0
    out = capsys.readouterr().out
    assert "not enabled" in out and "rejected" in out and "no leak" in out


def test_cli_bad_trace_is_exit_2(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kvproof_trace": 1}\n')
    assert main(["replay", str(bad)]) == 2
    assert f"{bad}:1" in capsys.readouterr().err


def skip_length_check(variant: Any, **kw: Any) -> Cluster:
    """An engine whose decode skips the commit check (the written length) that its variant
    says it performs."""
    c = Cluster(variant, **kw)
    sw = replace(c.handoff.sw, written_length_check=False)
    rule = c.handoff.rules["commit"]

    def commit(ctx: Any, f: Any, ev: Any) -> None:
        real, ctx.sw = ctx.sw, sw
        try:
            rule.effect(ctx, f, ev)
        finally:
            ctx.sw = real

    c.handoff.rules["commit"] = replace(rule, effect=commit)
    return c


def length_checked_incident() -> Variant:
    """0.5.19 with the written-length check: the model refuses the placeholder's short
    transfer at commit (no leak); an engine that skips the check leaks."""
    base = load_variant("sglang-0.5.19-pd")
    return replace(
        base,
        name="sglang-0.5.19-pd+length-check",
        switches=replace(base.switches, written_length_check=True),
    )


def test_broken_engine_is_caught_where_the_model_holds() -> None:
    checked = length_checked_incident()
    trace = read_jsonl(INCIDENT)
    honest = replay_trace(trace, checked, max_new_tokens=8)
    assert honest.divergence is None and "isolation" not in dict(
        (n, s) for s, n in honest.model_violations
    )
    broken = replay_trace(trace, checked, engine=skip_length_check, max_new_tokens=8)
    assert broken.divergence is not None and broken.divergence.action == "commit(0)"
    assert {m.var for m in broken.divergence.mismatches} >= {"dphase", "resp"}
    assert broken.exit_code == 1
