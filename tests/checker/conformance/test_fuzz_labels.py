"""Fuzz findings say what the engine showed, in replay's words (issue 12).

A ``leak`` is only a response carrying another tenant's canary; an invariant broken on the
engine's state is a ``violation`` (or a ``wrong_answer`` when a 200's tokens differ from the
single node's). The walks below are shrunk fuzz findings, forced step by step; the engine
drains after the finding as replay does, and ``kvproof replay`` of the saved trace says
the same thing as the fuzz finding.
"""

from __future__ import annotations

import pytest

from kvproof.checker.conformance.fuzz import COUNTERS, FuzzStats, fuzz
from kvproof.checker.conformance.replay import replay_trace
from kvproof.checker.conformance.walk import Walk, WalkResult, run_walk
from kvproof.checker.report.html_page import engine_side
from kvproof.model.lang.instance import ActionInstance
from kvproof.spec.variant import load_variant


def steps(*text: str) -> tuple[ActionInstance, ...]:
    out = []
    for s in text:
        name, args = s.rstrip(")").split("(")
        out.append(ActionInstance(name, tuple(int(a) for a in args.split(","))))
    return tuple(out)


def walk(over_p: tuple[bool, ...], over_d: tuple[bool, ...], reserve: tuple[int, ...]) -> Walk:
    return Walk(over_p, over_d, reserve, 0, ())


def forced(variant: str, w: Walk, path: tuple[ActionInstance, ...]) -> WalkResult:
    return run_walk(load_variant(variant), w, forced=path, faults=True)


# The incident: the placeholder's 200 reads stale pages holding the warm-up tenant's KV.
INCIDENT = (
    "sglang-0.5.19-pd",
    walk((False, True), (True, False), (2, 2)),
    steps("arrive(1)", "alloc(1, 1)", "alloc(1, 0)", "send(1)", "post(1, 1)", "land(1, 1)")
    + steps("done(1)", "commit(1)"),
)
# Head trimming misplaces the request's own chunks: isolation breaks, no foreign canary.
HEAD_TRIM = (
    "vllm-nixl-push-head-trim",
    Walk((False, False), (False, False), (3, 1), 0, (), (False, True)),
    steps("arrive(1)", "alloc(1, 1)", "send(1)", "post(1, 1)", "land(1, 1)", "done(1)")
    + steps("commit(1)"),
)
# Success overwrites the abort: the aborted request gets 200 over its own complete KV.
OVERWRITE = (
    "sglang-pd-success-overwrites-abort",
    walk((False, False), (False, False), (1, 3)),
    steps("arrive(1)", "alloc(1, 0)", "alloc(1, 2)", "alloc(1, 1)", "send(1)", "post(1, 0)")
    + steps("land(1, 0)", "post(1, 1)", "p_abort(1)", "land(1, 1)", "post(1, 2)")
    + steps("land(1, 2)", "done(1)", "commit(1)"),
)


def test_a_leak_is_a_foreign_canary_in_a_response() -> None:
    res = forced(*INCIDENT)
    assert (res.kind, res.shows) == ("leak", "leak"), res.detail
    leaked = [r for r in res.responses if r.foreign_canaries]
    assert leaked and leaked[0].foreign_canaries == ("warmup",) and "CANARY-W-" in leaked[0].text
    assert "canary" in res.detail and res.trace.violated == "isolation"


def test_isolation_on_the_engine_state_without_a_foreign_canary_is_no_leak() -> None:
    # The walk breaks isolation on the engine's state (the old label: "leak"); the answer
    # is the request's own KV at the wrong positions.
    res = forced(*HEAD_TRIM)
    assert "engine violates isolation" in res.detail
    assert (res.kind, res.shows) == ("wrong_answer", "wrong_answer"), res.detail
    assert not any(r.foreign_canaries for r in res.responses)
    assert any(r.status == 200 and not r.tokens_match for r in res.responses)


def test_a_state_only_break_is_a_violation() -> None:
    res = forced(*OVERWRITE)
    assert "engine violates reject_final" in res.detail
    assert (res.kind, res.shows) == ("violation", "engine_state"), res.detail
    assert res.responses and not any(r.foreign_canaries for r in res.responses)


@pytest.mark.parametrize("case", [INCIDENT, HEAD_TRIM, OVERWRITE], ids=lambda c: c[0])
def test_fuzz_says_what_replay_of_its_trace_says(case: tuple) -> None:  # type: ignore[type-arg]
    res = forced(*case)
    report = replay_trace(res.trace, load_variant(case[0]))
    assert report.divergence is None and report.shows == res.shows
    assert report.leak == (res.kind == "leak")


def test_every_kind_has_its_counter() -> None:
    stats = FuzzStats()
    for kind in ("divergence", "crash", "leak", "wrong_answer", "violation"):
        stats.count(kind)
    assert all(getattr(stats, key) == 1 for key in COUNTERS.values())
    total = FuzzStats()
    total.add(stats)
    total.add(stats)
    assert (total.leaks, total.wrong_answers, total.violations) == (2, 2, 2)


def test_the_counters_follow_the_shrunk_finding() -> None:
    batch = FuzzStats(traces=5, violations=1)  # as found, before shrinking
    total = FuzzStats()
    total.add(batch)
    total.add(FuzzStats(traces=9))
    total.recount(batch, "leak")  # the shrunk finding shows a leak
    assert (total.traces, total.violations, total.leaks) == (14, 0, 1)


def test_engine_campaign_finding_is_what_replay_shows() -> None:
    variant = load_variant("sglang-0.5.19-pd")
    result = fuzz(variant, traces=100, seed=0, workers=1)  # shrunk, then trimmed
    f = result.finding
    assert f is not None and (f.kind, f.shows) == ("leak", "leak"), f and f.detail
    assert [getattr(result.stats, key) for key in COUNTERS.values()] == [0, 1, 0, 0, 0]
    report = replay_trace(f.trace, variant)
    assert report.shows == "leak" and [r.foreign_canaries for r in report.canary_leaks]


def test_html_says_leak_only_for_a_foreign_canary() -> None:
    own = {"request": 0, "tenant": "t0", "status": 200, "text": "x", "tokens_match": False}
    html = engine_side([own])
    assert "LEAK" not in html and "WRONG ANSWER" in html and 'class="response wrong"' in html
    foreign = own | {"foreign": ["warmup"], "canaries": [["warmup", "x"]]}
    html = engine_side([foreign])
    assert "✖ LEAK" in html and "WRONG ANSWER" not in html
