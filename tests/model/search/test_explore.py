"""Explicit-state search: agrees with BMC and with the variants' expectations; symmetry
reduction and the compiled interpreter change nothing observable; deadlocks; exports."""

from __future__ import annotations

import json
import random
from pathlib import Path

import networkx as nx
import pytest

from kvproof.checker.cli import main
from kvproof.checker.render.explore_graph import graphml_graph, to_dot
from kvproof.model.handoff import build_handoff, protocol_of
from kvproof.model.lang.concrete import Concrete, State
from kvproof.model.lang.dsl import BOOL, Action, Invariant, Protocol, Var
from kvproof.model.lang.instance import Instance
from kvproof.model.lang.trace import replay
from kvproof.model.search.bmc import bmc
from kvproof.model.search.explore import explore
from kvproof.spec.variant import list_variants, load_variant

VARIANTS = list_variants()
SMALL = {"Req": 2, "Page": 2}
DEPTH = 14  # >= every shortest counterexample at 2 requests / 2 pages (at most 14)


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_explore_agrees_with_bmc_and_expectations(variant) -> None:
    protocol = protocol_of(variant)  # under the variant's assumptions
    full = explore(protocol, SMALL, variant=variant.name)
    assert not full.truncated
    # The whole state space at 2/2 decides each invariant: it matches the variant's claim.
    for name in full.invariants:
        assert ("holds" if full.holds(name) else "violated") == variant.expect[name], name
    primary = explore(protocol, SMALL, variant=variant.name, stop_at_violation=True)
    checked = bmc(protocol, SMALL, DEPTH, variant=variant.name)
    for r in checked.results:
        shortest = full.shortest(r.invariant)
        if shortest is not None and shortest <= DEPTH:
            assert (r.holds, r.shortest) == (False, shortest), r.invariant
        else:
            assert r.holds, r.invariant
        # TLC's "stop at a violation" finds BMC's primary trace (no earlier violation).
        clean = primary.shortest(r.invariant)
        if not r.holds and r.primary:
            assert clean == r.depth, r.invariant
        else:
            assert clean is None or clean > DEPTH, r.invariant
    concrete = Concrete(Instance(protocol, SMALL))
    for name, trace in full.counterexamples.items():
        assert trace.violated == name
        assert name in concrete.violated(replay(trace, concrete)[-1])


@pytest.mark.parametrize(
    "name", ["sglang-0.5.19-pd", "mooncake-batch-failed-partial", "vllm-stale-block-lease"]
)
@pytest.mark.slow
def test_symmetry_reduction_keeps_verdicts_and_lengths(name: str) -> None:
    protocol = build_handoff(load_variant(name).switches)
    reduced = explore(protocol, SMALL, symmetry=("Page",))
    plain = explore(protocol, SMALL, symmetry=())
    assert reduced.states < plain.states
    assert reduced.diameter == plain.diameter
    for inv in plain.invariants:
        assert reduced.shortest(inv) == plain.shortest(inv)
        assert (reduced.violating[inv] == 0) == (plain.violating[inv] == 0)
    assert (reduced.deadlocks == 0) == (plain.deadlocks == 0)


def test_symmetry_reduction_maps_traces_back_to_real_runs() -> None:
    protocol = build_handoff(load_variant("sglang-0.5.19-pd").switches)
    sizes = {"Req": 2, "Page": 3}
    result = explore(protocol, sizes, max_states=60_000)
    concrete = Concrete(Instance(protocol, sizes))
    assert result.counterexamples
    for name, trace in result.counterexamples.items():
        assert name in concrete.violated(replay(trace, concrete)[-1])


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_compiled_interpreter_matches_reference(variant) -> None:
    protocol = build_handoff(variant.switches)
    inst = Instance(protocol, SMALL)
    fast, slow = Concrete(inst), Concrete(inst, compiled=False)
    result = explore(protocol, SMALL, symmetry=(), graph=True, max_states=4000)
    states = [d["state"] for _, d in result.graph.nodes(data=True)]
    for state in random.Random(0).sample(states, 60):
        assert list(fast.successors(state)) == list(slow.successors(state))
        assert fast.violated(state) == slow.violated(state)
        for action in inst.all_instances:
            assert fast.step(state, action) == slow.step(state, action)


# -- deadlocks -------------------------------------------------------------------------------


def _philosophers() -> Protocol:
    """Two requests each need both pages; grabbing one each is a deadlock."""

    def grab(s, r, p) -> None:
        s.require(s.not_(s.done(r)))
        s.require(s.forall("Req", lambda x: s.not_(s.owns(x, p))))
        s.set("owns", (r, p), True)

    def finish(s, r) -> None:
        s.require(s.forall("Page", lambda p: s.owns(r, p)))
        s.update("owns", lambda x, p, old: s.ite(s.eq(x, r), False, old))
        s.set("done", (r,), True)

    return Protocol(
        name="philosophers",
        sorts=("Req", "Page"),
        vars=(Var("owns", ("Req", "Page"), BOOL), Var("done", ("Req",), BOOL)),
        actions=(Action("grab", ("Req", "Page"), grab), Action("finish", ("Req",), finish)),
        invariants=(Invariant("true", lambda s: True),),
        init=lambda s: True,
        symmetric=("Req", "Page"),
        holding=("owns",),  # a page held: a terminal state with one is a deadlock
    )


@pytest.mark.parametrize("symmetry", [(), ("Page",)])
def test_deadlock_is_a_stuck_holder_not_a_finished_run(symmetry) -> None:
    protocol = _philosophers()
    result = explore(protocol, SMALL, symmetry=symmetry)
    # Terminal: both done (not a deadlock), and each holding one page (a deadlock).
    assert result.deadlocks == (2 if not symmetry else 1)
    assert result.terminal == result.deadlocks + 1
    trace = result.deadlock
    assert trace is not None and len(trace) == 2
    concrete = Concrete(Instance(protocol, SMALL))
    last = replay(trace, concrete)[-1]
    assert not list(concrete.successors(last))
    assert all(concrete.value(last, "owns", (r, p)) for r, p in [(0, trace.steps[0].args[1])])


def test_truncation_is_reported() -> None:
    protocol = build_handoff(load_variant("sglang-0.5.22-pd").switches)
    result = explore(protocol, {"Req": 3, "Page": 3}, max_states=2000)
    assert result.truncated and result.states >= 2000


# -- exports and CLI -------------------------------------------------------------------------


def test_dot_and_graphml_export(tmp_path: Path) -> None:
    protocol = build_handoff(load_variant("vllm-decode-extra-block").switches)
    result = explore(protocol, SMALL, variant="vllm-decode-extra-block", graph=True)
    g = result.graph
    assert g.number_of_nodes() == result.states
    path = tmp_path / "g.graphml"
    nx.write_graphml(graphml_graph(result, protocol), path)
    back = nx.read_graphml(path)
    assert back.number_of_nodes() == g.number_of_nodes()
    assert back.number_of_edges() == g.number_of_edges()
    bad = [n for n, d in back.nodes(data=True) if d["violated"]]
    assert len(bad) == result.violating["isolation"]
    assert all("leaked" in back.nodes[n]["state"] for n in bad)
    dot = to_dot(result)
    assert dot.startswith('digraph "vllm-decode-extra-block" {') and dot.rstrip().endswith("}")
    assert dot.count(" -> ") == g.number_of_edges()
    assert dot.count("color=red,") == len(bad)


@pytest.mark.slow
def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["explore", "--requests", "2", "--pages", "2", "--json"]
    assert main([*args, "sglang-0.5.19-pd"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["invariants"]["no_stray_write"]["shortest"] == 6
    steps = out["invariants"]["no_stray_write"]["counterexample"]["steps"]
    assert steps[-1]["action"] == "land" and steps[-1]["violated"] == ["no_stray_write"]
    dot, graphml = tmp_path / "g.dot", tmp_path / "g.graphml"
    exports = ["--dot", str(dot), "--graphml", str(graphml)]
    assert main([*args, "vllm-decode-extra-block", *exports]) == 1
    assert dot.read_text().startswith("digraph")
    states = json.loads(capsys.readouterr().out)["states"]
    assert nx.read_graphml(graphml).number_of_nodes() == states
    assert main([*args, "sglang-0.5.22-pd"]) == 0
    capsys.readouterr()
    assert main(["explore", "no-such-variant"]) == 2
    assert main(["explore", "sglang-0.5.22-pd", "--pages", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("kvproof: error:") for line in err)
    assert main(["explore", "sglang-0.5.22-pd", "--requests", "1", "--pages", "1"]) == 0
    assert "states" in capsys.readouterr().out


def test_state_is_the_public_state_type() -> None:
    protocol = build_handoff(load_variant("sglang-0.5.22-pd").switches)
    result = explore(protocol, {"Req": 1, "Page": 1}, graph=True)
    assert all(isinstance(d["state"], State) for _, d in result.graph.nodes(data=True))
