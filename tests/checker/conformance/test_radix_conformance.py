"""Replay of decode's radix cache (issue 12 item 4): the engine's tree, locks and ground
truth are compared with the model's ``cached``/``shares``/``prefix_ok``/``shared_write``."""

from __future__ import annotations

from kvproof.checker.conformance.abstraction import abstract, compare
from kvproof.checker.conformance.fuzz import fuzz
from kvproof.checker.conformance.lockstep import Lockstep
from kvproof.checker.conformance.replay import replay_trace
from kvproof.model.lang.instance import ActionInstance as A
from kvproof.model.lang.trace import Trace
from kvproof.spec.variant import load_variant

RACE, FIXED = "sglang-pd-decode-radix-race", "sglang-pd-decode-radix-fixed"
INIT = {
    "over_p": {(0,): False, (1,): False},
    "over_d": {(0,): False, (1,): False},
    "hit": {(0,): False, (1,): True},
}


def run(reused: int) -> list[A]:
    """r0 runs and inserts page 0; r1 (a head hit) locks it and takes page ``reused``."""
    out = [A("arrive", (0,)), A("alloc", (0, 0)), A("send", (0,)), A("post", (0, 0))]
    out += [A("land", (0, 0)), A("done", (0,)), A("commit", (0,)), A("insert", (0, 0))]
    out += [A("finish", (0,)), A("arrive", (1,)), A("share", (1, 0)), A("alloc", (1, reused))]
    out += [A("send", (1,)), A("post", (1, reused)), A("land", (1, reused)), A("done", (1,))]
    return [*out, A("commit", (1,))]


def test_fixed_radix_run_replays_step_by_step_and_is_clean() -> None:
    trace = Trace(FIXED, {"Req": 2, "Page": 2}, INIT, tuple(run(1)), None, {})
    report = replay_trace(trace, load_variant(FIXED), max_new_tokens=6)
    assert report.divergence is None and report.not_enabled is None, report.divergence
    assert report.steps_applied == len(trace.steps)
    # r1's shared head gives r1's tokens
    assert report.exit_code == 0 and not report.failing_answers


def test_race_replays_and_the_reader_answers_wrong() -> None:
    trace = Trace(RACE, {"Req": 2, "Page": 2}, INIT, tuple(run(0)), "isolation", {})
    report = replay_trace(trace, load_variant(RACE), max_new_tokens=6)
    assert report.divergence is None and report.not_enabled is None, report.divergence
    assert (15, "one_owner") in report.engine_violations
    assert (17, "isolation") in report.engine_violations
    # With two requests the freed head page is overwritten by the reader's own later chunk:
    # a wrong answer; the 3-request witness (``checker/traces/corpus.py``) shows a canary.
    assert report.wrong_answers and not report.leak and report.exit_code == 1


def test_abstraction_reads_the_tree_and_the_locks() -> None:
    ls = Lockstep(load_variant(FIXED), {"Req": 2, "Page": 2}, INIT, (1, 1), max_new_tokens=4)
    for inst in run(1)[:11]:  # through share(r1, p0)
        status, div = ls.apply(inst)
        assert status == "ok", div
    eng = abstract(ls.cluster, ls.concrete, ls.rids.offset)
    c = ls.concrete
    assert c.value(eng, "cached", (0,)) and c.value(eng, "prefix_ok", (0,))
    assert c.value(eng, "shares", (1, 0)) and not c.value(eng, "shares", (0, 0))  # r0 done
    assert compare(c, ls.state, eng) == []
    # a lock the engine forgot is a divergence the comparison names
    ls.cluster.handoff.flights[ls.rids.offset + 1].d.shared.clear()
    eng = abstract(ls.cluster, ls.concrete, ls.rids.offset)
    assert [m.var for m in compare(c, ls.state, eng)] == ["shares"]


def test_fuzz_finds_the_race_and_the_fixed_tree_stays_clean() -> None:
    found = fuzz(load_variant(RACE), traces=50, faults=True, seed=0, workers=1)
    assert found.finding is not None and found.finding.kind in ("violation", "leak")
    assert len(found.finding.trace.steps) <= 20  # shrunk: insert, release, reuse, write
    assert any(s.action == "insert" for s in found.finding.trace.steps)
    clean = fuzz(load_variant(FIXED), traces=100, faults=True, seed=0, workers=1)
    assert clean.finding is None, clean.finding and clean.finding.detail
    assert clean.stats.faults > 0
