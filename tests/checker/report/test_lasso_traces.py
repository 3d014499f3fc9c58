"""Lassos (issue #29 items 3 and 6): the loop kept in JSONL and ITF, checked to close on read.

The lassos are found here, in the concrete interpreter, not by the liveness search: a BFS to
the shortest stem after which a given loop of steps returns to the state it started from
(in the handoff, a running request's decode ``step`` reads its pages and changes nothing).
"""

from __future__ import annotations

import json
import re
from collections import deque
from pathlib import Path

import pytest

from kvproof.checker.cli import main
from kvproof.checker.traces.itf import read_itf, write_itf
from kvproof.checker.traces.tracefile import check_against, read_jsonl, write_jsonl
from kvproof.model.handoff import build_handoff
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import Trace, initial_assignment, replay
from kvproof.spec.errors import KvproofInputError
from kvproof.spec.variant import load_variant

VARIANT = "sglang-pd-deferred-timeout"


def protocol():  # type: ignore[no-untyped-def]
    return build_handoff(load_variant(VARIANT).switches)


# The happy path's events: the BFS for a stem takes only these (two requests' whole graph
# takes seconds, and the stem is the same).
HAPPY = frozenset({"arrive", "alloc", "send", "post", "land", "done", "commit"})


def find_lasso(
    loop: tuple[ActionInstance, ...],
    sizes: dict[str, int],
    violated: str = "pages_return",
    need: dict[tuple[str, tuple[int, ...]], object] | None = None,
) -> Trace:
    """The shortest stem (of ``HAPPY`` events) from an initial state to one that ``loop``
    brings back to itself, where the cells ``need`` names have those values."""
    concrete = Concrete(Instance(protocol(), sizes))
    starts = list(concrete.initial_states())
    queue = deque((s, s, ()) for s in starts)
    seen = {concrete.as_dict(s).__repr__() for s in starts}
    while queue:
        init, state, stem = queue.popleft()
        end = state
        for inst in loop:
            end = end and concrete.step(end, inst)
        wanted = all(concrete.value(state, v, a) == x for (v, a), x in (need or {}).items())
        if end is not None and wanted and concrete.as_dict(end) == concrete.as_dict(state):
            steps = (*stem, *loop)
            init_values = initial_assignment(concrete, init)
            return Trace(VARIANT, dict(sizes), init_values, steps, violated, loop=len(stem))
        for inst, nxt in concrete.successors(state):
            if inst.action not in HAPPY:
                continue
            key = repr(concrete.as_dict(nxt))
            if key not in seen:
                seen.add(key)
                queue.append((init, nxt, (*stem, inst)))
    raise AssertionError(f"no state where {loop} is a loop")


ONE = {"Req": 1, "Page": 1}
TWO = {"Req": 2, "Page": 2}


@pytest.fixture(scope="module")
def lasso() -> Trace:
    """arrive .. commit(r0), then r0's decode step forever: page p0 is never returned."""
    return find_lasso((ActionInstance("step", (0,)),), ONE)


@pytest.fixture(scope="module")
def lasso2() -> Trace:
    """Two requests running, their decode steps taking turns: a loop of two steps."""
    return find_lasso((ActionInstance("step", (0,)), ActionInstance("step", (1,))), TWO)


@pytest.fixture(scope="module")
def starved() -> Trace:
    """r0 holds the one page and decodes forever; r1 waits for a page: never answered."""
    need = {("dphase", (1,)): "queued"}
    return find_lasso((ActionInstance("step", (0,)),), {"Req": 2, "Page": 1}, "answered", need)


def test_the_test_lassos_are_lassos(lasso: Trace, lasso2: Trace) -> None:
    for trace in (lasso, lasso2):
        assert trace.loop is not None and 0 < trace.loop < len(trace.steps)
        concrete = Concrete(Instance(protocol(), trace.sizes))
        states = replay(trace, concrete)
        assert concrete.as_dict(states[-1]) == concrete.as_dict(states[trace.loop])
    assert lasso.steps[-1] == ActionInstance("step", (0,)) and len(lasso2.steps) - lasso2.loop == 2


# -- JSONL -----------------------------------------------------------------------------------


def test_jsonl_keeps_the_loop(tmp_path: Path, lasso2: Trace) -> None:
    out = tmp_path / "l.jsonl"
    write_jsonl(lasso2, out, protocol=protocol())
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["loop"] == lasso2.loop
    marked = [row["step"] for row in lines[1:] if row.get("in_loop")]
    assert marked == list(range(lasso2.loop + 1, len(lasso2.steps) + 1))
    again = read_jsonl(out)
    assert again.loop == lasso2.loop and again.steps == lasso2.steps
    assert again.violated == "pages_return"
    check_against(again, protocol(), str(out))


def test_a_safety_trace_has_no_loop_key(tmp_path: Path, lasso: Trace) -> None:
    safety = Trace(VARIANT, lasso.sizes, lasso.init, lasso.steps[:3], "isolation")
    out = tmp_path / "s.jsonl"
    write_jsonl(safety, out, protocol=protocol())
    text = out.read_text()
    assert '"loop"' not in text and "in_loop" not in text
    assert read_jsonl(out).loop is None


def _rewrite(path: Path, edit) -> None:  # type: ignore[no-untyped-def]
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    edit(rows)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")


@pytest.mark.parametrize(
    ("edit", "line", "message"),
    [
        (lambda rows: rows[0].update(loop=9), 1, "'loop' 9 is out of range"),
        (lambda rows: rows[0].update(loop=-1), 1, "out of range"),
        (lambda rows: rows[0].update(loop="7"), 1, "'loop' must be an integer"),
        # the loop dropped from the header, its marks still on the steps
        (lambda rows: rows[0].pop("loop"), 9, "the header has no 'loop'"),
        (lambda rows: rows[3].update(in_loop=True), 4, "the loop starts at 8"),
        # starts one step early: the state after commit is not the state after done
        (lambda rows: rows[0].update(loop=6), 9, "the loop does not close"),
    ],
)
def test_bad_loop_in_jsonl_names_file_and_line(  # type: ignore[no-untyped-def]
    tmp_path: Path, lasso: Trace, edit, line: int, message: str
) -> None:
    out = tmp_path / "bad.jsonl"
    write_jsonl(lasso, out, protocol=protocol())
    _rewrite(out, edit)
    with pytest.raises(KvproofInputError) as exc:
        read_jsonl(out)
    assert exc.value.where == f"{out}:{line}" and message in exc.value.message


def test_an_open_loop_without_states_is_caught_against_the_model(
    tmp_path: Path, lasso: Trace
) -> None:
    out = tmp_path / "bare.jsonl"
    write_jsonl(lasso, out)  # no protocol: no informative states to compare
    _rewrite(out, lambda rows: rows[0].update(loop=6))
    trace = read_jsonl(out)
    with pytest.raises(KvproofInputError, match="the loop does not close"):
        check_against(trace, protocol(), str(out))


def test_bad_loop_is_exit_2_with_one_line(
    tmp_path: Path, lasso: Trace, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bad.jsonl"
    write_jsonl(lasso, out, protocol=protocol())
    # len(steps) is a stutter (an empty loop); one past it is out of range
    _rewrite(out, lambda rows: rows[0].update(loop=len(lasso.steps) + 1))
    assert main(["replay", str(out), "--no-drain"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and "out of range" in err[0]


# -- ITF -------------------------------------------------------------------------------------


def test_itf_loop_counts_states(tmp_path: Path, lasso2: Trace) -> None:
    out = tmp_path / "l.itf.json"
    write_itf(lasso2, out, protocol())
    doc = json.loads(out.read_text())
    # ITF's loop starts at the first state a loop step reaches, one past kvproof's: the last
    # state equals states[loop] (kvproof), and is followed by states[loop + 1] (ADR-015)
    assert doc["loop"] == lasso2.loop + 1
    assert len(doc["states"]) == len(lasso2.steps) + 1
    looped = [s["mbt::actionTaken"] for s in doc["states"][doc["loop"] :]]
    assert looped == [s.action for s in lasso2.steps[lasso2.loop :]]
    again = read_itf(out, protocol())
    assert again.loop == lasso2.loop and again.steps == lasso2.steps


def test_itf_from_another_tool_without_the_repeated_state(tmp_path: Path, lasso2: Trace) -> None:
    """Apalache writes a lasso's states once: the last state is followed by states[loop], and
    the step back is not in the file. kvproof infers it and ends the loop with it."""
    out = tmp_path / "apalache.itf.json"
    write_itf(lasso2, out, protocol())
    doc = json.loads(out.read_text())
    doc["states"].pop()  # the repeated state (equal to states[lasso2.loop])
    doc["loop"] = lasso2.loop
    for st in doc["states"]:
        st.pop("mbt::actionTaken")
        st.pop("mbt::nondetPicks")
    out.write_text(json.dumps(doc))
    again = read_itf(out, protocol())
    assert again.loop == lasso2.loop and len(again.steps) == len(lasso2.steps)
    assert again.steps[-1].action == "step"


@pytest.mark.parametrize(
    ("loop", "message"),
    [
        (99, "'loop' 99 is out of range: the trace has 9 states"),
        (True, "'loop' must be an integer"),
        (2, "the loop does not close"),  # no step leads from the last state to states[2]
    ],
)
def test_bad_loop_in_itf(tmp_path: Path, lasso: Trace, loop: object, message: str) -> None:
    out = tmp_path / "bad.itf.json"
    write_itf(lasso, out, protocol())
    doc = json.loads(out.read_text())
    doc["loop"] = loop
    out.write_text(json.dumps(doc))
    with pytest.raises(KvproofInputError) as exc:
        read_itf(out, protocol())
    assert exc.value.where == f"{out}: loop" and message in exc.value.message


# -- printing --------------------------------------------------------------------------------


def lasso_check(trace: Trace):  # type: ignore[no-untyped-def]
    """A ``VariantVerdict`` whose one result is ``trace`` (as the liveness search gives)."""
    from kvproof.checker.verify.verdict import VariantVerdict
    from kvproof.model.search.bmc import BmcResult, InvariantResult

    found = InvariantResult("answered", False, len(trace), trace, shortest=len(trace))
    bmc = BmcResult(VARIANT, trace.sizes, len(trace), (found,), 0.0)
    return VariantVerdict(load_variant(VARIANT), protocol(), bmc)


def test_json_of_a_lasso_has_the_loop(lasso2: Trace) -> None:
    from kvproof.checker.render.check_json import variant_json

    (entry,) = variant_json(lasso_check(lasso2))["invariants"]
    assert entry["loop"] == lasso2.loop
    flags = [bool(row.get("in_loop")) for row in entry["trace"]]
    assert flags == [i >= lasso2.loop for i in range(len(lasso2.steps))]


def test_the_printed_trace_marks_the_loop(lasso2: Trace) -> None:
    from rich.console import Console

    from kvproof.checker.render.check_json import variant_json
    from kvproof.checker.render.check_text import render_check

    console = Console(record=True, width=200, color_system=None)
    check = lasso_check(lasso2)
    render_check(console, check, variant_json(check), raw=True)  # the model's labels
    text = console.export_text()
    # the table's rows as (step, action) cells
    rows = [[c.strip() for c in x.split("│")[1:3]] for x in text.splitlines() if "│" in x]
    start = rows.index(["", "-- loop: the following steps repeat forever --"])
    back = rows.index(["", f"-- back to step {lasso2.loop + 1} --"])
    assert rows[start - 1][0] == str(lasso2.loop)  # the stem's last step just before
    # the two loop steps, and only they, between the marks, and nothing after
    assert rows[start + 1 : back] == [["15", "step(r0)"], ["16", "step(r1)"]]
    assert back == len(rows) - 1 or not rows[back + 1][0].isdigit()
    assert "page p0 is never returned (r0 holds it)" in text


def test_junit_text_marks_the_loop(lasso: Trace) -> None:
    from kvproof.checker.render.check_gate import trace_short, trace_text
    from kvproof.checker.render.check_json import variant_json

    (entry,) = variant_json(lasso_check(lasso))["invariants"]
    lines = trace_text(entry).splitlines()
    steps = [i for i, x in enumerate(lines) if x.strip()[:1].isdigit()]
    assert lines[steps[-1] - 1] == "-- loop: the following steps repeat forever --"
    assert lines[steps[-1] + 1] == f"-- back to step {lasso.loop + 1} --"
    assert trace_short(entry).endswith("commit(r0) -> (step(r0))forever")


# -- what the loop never resolves ------------------------------------------------------------


def test_forever_names_what_the_whole_loop_leaves_unresolved(
    lasso: Trace, lasso2: Trace, starved: Trace
) -> None:
    from kvproof.checker.verify.liveness import forever

    assert [f.text() for f in forever(lasso, protocol())] == [
        "page p0 is never returned (r0 holds it)"
    ]
    assert [f.target for f in forever(lasso2, protocol())] == ["p0", "p1"]
    # answered: r1 (queued, no page) only; r0 got its 200 at commit
    assert [f.text() for f in forever(starved, protocol())] == ["request r1 is never answered"]


# -- replay on the engine --------------------------------------------------------------------


@pytest.mark.parametrize("loops", [1, 4])
def test_replay_runs_the_stem_once_then_the_loop_k_times(lasso2: Trace, loops: int) -> None:
    from kvproof.checker.conformance.replay import replay_trace

    report = replay_trace(lasso2, load_variant(VARIANT), loops=loops, max_new_tokens=8)
    assert report.divergence is None and report.crash is None
    loop_len = len(lasso2.steps) - lasso2.loop
    assert report.steps_applied == lasso2.loop + loops * loop_len
    assert report.lasso.rounds == loops and report.lasso.repeats
    assert report.lasso.forever == (
        "page p0 is never returned (r0 holds it)",
        "page p1 is never returned (r1 holds it)",
    )
    assert report.drained == ()  # a lasso never leaves its loop: no drain
    assert report.exit_code == 1  # the liveness counterexample shows on the engine


def test_replay_of_a_starving_lasso_says_who_is_never_answered(
    tmp_path: Path, starved: Trace, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "starved.jsonl"
    write_jsonl(starved, out, protocol=protocol())
    assert main(["replay", str(out), "--loops", "2", "--max-new-tokens", "8"]) == 1
    text = capsys.readouterr().out
    assert "the loop repeats on the engine (2 rounds): request r1 is never answered" in text
    assert main(["replay", str(out), "--loops", "2", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["lasso"] == {
        "loop": starved.loop,
        "loops": 2,
        "rounds": 2,
        "repeats": True,
        "forever": ["request r1 is never answered"],
        "resolved": None,
    }


def frees_on_second_step(variant, **kw):  # type: ignore[no-untyped-def]
    """An engine whose decode returns a running request's pages after its second step."""
    import dataclasses

    from kvproof.refimpl.cluster import Cluster

    c = Cluster(variant, **kw)
    rules = c.handoff.rules  # a copy per engine, so that a test can plant a bug in one
    original = rules["step"].effect
    seen: dict[int, int] = {}

    def step(ctx, f, ev):  # type: ignore[no-untyped-def]
        original(ctx, f, ev)
        seen[ev.rid] = seen.get(ev.rid, 0) + 1
        if seen[ev.rid] == 2:
            ctx.free_decode(f)

    rules["step"] = dataclasses.replace(rules["step"], effect=step)
    return c


def test_an_engine_that_leaves_the_loop_is_a_divergence_in_its_round(
    lasso: Trace, capsys: pytest.CaptureFixture[str]
) -> None:
    from kvproof.checker.cli.consoles import console_for
    from kvproof.checker.conformance.replay import replay_trace
    from kvproof.checker.render.replay import print_report

    variant = load_variant(VARIANT)
    report = replay_trace(lasso, variant, loops=3, engine=frees_on_second_step)
    assert report.lasso.rounds == 1 and not report.lasso.repeats
    assert report.divergence is not None and report.divergence.step == lasso.loop + 2
    assert report.exit_code == 1
    print_report(report, console_for())
    text = capsys.readouterr().out
    assert f"at step {lasso.loop + 2} (loop round 2, trace step {lasso.loop + 1})" in text
    assert "the loop repeats on the engine" not in text


# -- the HTML report -------------------------------------------------------------------------


def _group(html: str, cls: str) -> str:
    """The first ``<g class="cls" ...>...</g>`` of the chart (no nested groups in it)."""
    start = html.index(f'<g class="{cls}"')
    return html[start : html.index("</g>", start)]


def test_html_draws_the_loop_and_marks_the_page_held_forever(lasso2: Trace) -> None:
    from kvproof.checker.report.html_page import trace_page

    html = trace_page(lasso2, protocol(), variant=load_variant(VARIANT))
    n, start = len(lasso2.steps), lasso2.loop + 1
    loop = _group(html, "loop")
    # one arrow from the last step back up to the loop's first, said in words as well
    assert f'data-loop-from="{n}" data-loop-to="{start}"' in loop
    assert 'class="loop-arrow"' in loop and 'marker-end="url(#arrow)"' in loop
    assert f"after step {n}, back to step {start}: the loop repeats forever" in loop
    # the loop's steps, and only they, are drawn in the loop
    in_loop = re.findall(r'<g class="msg[^"]* in-loop" data-step="(\d+)"', html)
    assert in_loop == [str(k) for k in range(start, n + 1)]
    # the pages never returned: "forever" on their rows and in the column back to the start
    for p in ("p0", "p1"):
        row = html[html.index(f'<tr data-page="{p}" class="forever">') :]
        row = row[: row.index("</tr>")]
        assert "∞ forever" in row and f"page {p} is never returned" in row
    assert f"back to step {start}, forever" in html
    assert "steps 15–16 repeat forever" in html


def test_html_marks_the_request_never_answered(starved: Trace) -> None:
    from kvproof.checker.report.html_page import trace_page

    html = trace_page(starved, protocol())
    listed = '<li data-forever="r1"><span class="forever-mark">∞ forever</span> request r1 is'
    assert listed + " never answered" in html
    # on r1's arrival in the chart, not r0's: r0 was answered at commit
    marks = re.findall(r'<text class="forever-mark" data-forever="(r\d)"', html)
    assert marks == ["r1"]
    assert '<tr data-page="p0" class="forever">' not in html  # answered is about requests
    assert "⚠ VIOLATED after step" not in html  # no step breaks it: the loop does


def test_html_of_a_safety_trace_has_no_loop(lasso: Trace) -> None:
    from kvproof.checker.report.html_page import trace_page

    safety = Trace(VARIANT, lasso.sizes, lasso.init, lasso.steps, None)
    html = trace_page(safety, protocol())
    body = html[html.index("<body>") :]  # the stylesheet names every mark
    assert 'class="loop"' not in body and "forever" not in body and "in-loop" not in body
    assert 'class="msg"' in body  # (the chart is there)


STORED = Path(__file__).parent / "fixtures" / "lasso" / "starved.answered.jsonl"


def test_the_stored_lasso_file_still_reads_as_written(starved: Trace) -> None:
    """A lasso file written once (``fixtures/lasso``) keeps loading as the same lasso."""
    stored = read_jsonl(STORED)
    assert (stored.steps, stored.loop, stored.init) == (starved.steps, starved.loop, starved.init)
    check_against(stored, protocol(), str(STORED))


def test_report_of_a_lasso_replays_and_draws_it(tmp_path: Path) -> None:
    out = tmp_path / "lasso.html"
    assert main(["report", str(STORED), "--html", str(out), "--max-new-tokens", "8"]) == 0
    html = out.read_text()
    assert 'class="loop"' in html and "∞ forever" in html
    assert "the loop repeats on the engine (3 rounds): request r1 is never answered" in html


CRASHED = Path(__file__).parent / "fixtures" / "lasso" / "crashed.deferred-timeout.jsonl"


@pytest.mark.parametrize("replay", [False, True])
def test_report_of_a_lasso_with_a_crash_step(tmp_path: Path, replay: bool) -> None:
    """A lasso of ``check --liveness --out`` may take a crash step (E20): ``report`` checks
    it against the liveness build, as ``replay`` does (it said "unknown action 'crash'")."""
    assert any(s.action == "crash" for s in read_jsonl(CRASHED).steps)
    out = tmp_path / "crashed.html"
    flags = ["--max-new-tokens", "8"] if replay else ["--no-replay"]
    assert main(["report", str(CRASHED), "--html", str(out), *flags]) == 0
    html = out.read_text()
    assert 'class="loop"' in html and "page p0 is never returned" in html
    assert ("the loop repeats on the engine (3 rounds)" in html) == replay
