"""Results are plain data (ARCHITECTURE.md; issue 16): no protocol, no closure inside, so
they pickle across worker processes unchanged. Renderers that name a state's cells take
the protocol as an argument."""

from __future__ import annotations

import pickle

import networkx as nx

from kvproof.checker.render import explore_graph
from kvproof.checker.render.explore_graph import graphml_graph, to_dot
from kvproof.model.handoff import protocol_of
from kvproof.model.search.bmc import bmc
from kvproof.model.search.complete import check_complete
from kvproof.model.search.explore import explore
from kvproof.model.search.induction import prove
from kvproof.spec.variant import load_variant

SMALL = {"Req": 2, "Page": 2}


def _graphml(result: object, protocol: object) -> str:
    return "\n".join(nx.generate_graphml(graphml_graph(result, protocol)))


def test_explore_result_with_its_graph_pickles() -> None:
    variant = "vllm-decode-extra-block"
    protocol = protocol_of(load_variant(variant))
    result = explore(protocol, SMALL, variant=variant, graph=True)
    assert result.graph is not None and result.violated
    assert not result.graph.graph  # no graph-level attributes (the protocol was one)
    back = pickle.loads(pickle.dumps(result))
    assert back == result  # every field but the graph (compare=False)
    assert nx.utils.graphs_equal(back.graph, result.graph)
    assert dict(back.graph.nodes(data=True)) == dict(result.graph.nodes(data=True))
    # The exports come from the data plus the protocol passed in: the same from the copy.
    assert to_dot(back) == to_dot(result)
    assert _graphml(back, protocol) == _graphml(result, protocol)
    assert explore_graph.render(back, protocol) == explore_graph.render(result, protocol)


def test_every_model_result_pickles() -> None:
    for name in ("sglang-0.5.19-pd", "sglang-0.5.22-pd"):
        protocol = protocol_of(load_variant(name))
        results = [
            bmc(protocol, SMALL, 6, variant=name),
            prove(protocol),
            check_complete(protocol, {"Req": 1, "Page": 2}, variant=name),
            explore(protocol, {"Req": 1, "Page": 2}, variant=name, graph=True),
        ]
        for result in results:
            back = pickle.loads(pickle.dumps(result))
            assert back == result, type(result).__name__
