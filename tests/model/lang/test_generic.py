"""Generic model code knows no protocol's vocabulary: a protocol with other sorts explores,
explains and round-trips its traces (no ``Req``/``Page``, no handoff variables)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kvproof.checker.traces.tracefile import read_jsonl, write_jsonl
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.dsl import Action, Invariant, Protocol, Var
from kvproof.model.lang.explain import explain
from kvproof.model.lang.instance import ActionInstance, Instance
from kvproof.model.lang.trace import Trace, replay
from kvproof.model.search.explore import explore


def gossip() -> Protocol:
    """Nodes forward messages; a message must never reach a node before it was sent."""

    def send(s: Any, m: Any) -> None:
        s.require(s.not_(s.sent(m)))
        s.set("sent", (m,), True)

    def deliver(s: Any, n: Any, m: Any) -> None:  # the bug: no guard on ``sent``
        s.require(s.not_(s.got(n, m)))
        s.set("got", (n, m), True)

    return Protocol(
        name="gossip",
        sorts=("Node", "Msg"),
        vars=(Var("sent", ("Msg",)), Var("got", ("Node", "Msg"))),
        actions=(Action("send", ("Msg",), send), Action("deliver", ("Node", "Msg"), deliver)),
        invariants=(
            Invariant(
                "causal",
                lambda s: s.forall(
                    "Node",
                    lambda n: s.forall("Msg", lambda m: s.implies(s.got(n, m), s.sent(m))),
                ),
                doc="a node only has messages that were sent",
            ),
        ),
        init=lambda s: True,
        symmetric=("Node",),
    )


def test_a_protocol_with_other_sorts_explores_and_explains(tmp_path: Path) -> None:
    protocol = gossip()
    sizes = {"Node": 2, "Msg": 2}
    result = explore(protocol, sizes, variant="gossip")
    trace = result.counterexamples["causal"]
    assert len(trace) == 1 and trace.steps[0].action == "deliver"
    concrete = Concrete(Instance(protocol, sizes))
    assert explain(concrete, replay(trace, concrete), "causal") == protocol.invariant("causal").doc
    # Arguments keep their parameter order on disk: (Node, Msg), though "m" sorts first.
    late = Trace("gossip", sizes, {}, (ActionInstance("deliver", (1, 0)),), violated="causal")
    write_jsonl(late, tmp_path / "t.jsonl", protocol=protocol)
    assert read_jsonl(tmp_path / "t.jsonl").steps == late.steps
    assert result.deadlocks == 0  # no ``holding`` variables declared: nothing is held
