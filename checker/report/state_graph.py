"""The state graph of an explicit-state search (``model/search/explore.py``), exported:
Graphviz DOT and a GraphML-ready graph with plain attributes (``kvproof explore --dot``,
``--graphml``)."""

from __future__ import annotations

from typing import Any


def _state_text(concrete: Any, state: Any) -> str:
    """The cells that differ from their defaults, e.g. ``dphase(r0)=queued owns(r0, p1)``."""
    out = []
    for var, cells in concrete.as_dict(state).items():
        default = concrete.protocol.var(var).default
        for args, value in cells.items():
            if value != default:
                name = concrete.inst.describe(var, args)
                out.append(name if value is True else f"{name}={value}")
    return " ".join(out)


def graphml_graph(result: Any, protocol: Any) -> Any:
    """The state graph with plain attributes only (GraphML takes str, int, float, bool);
    ``protocol`` (the one explored) names the cells of each state."""
    import networkx as nx

    from kvproof.model.lang.concrete import Concrete
    from kvproof.model.lang.instance import Instance

    g = result.graph
    if g is None:
        raise ValueError("explore ran without graph=True")
    concrete = Concrete(Instance(protocol, result.sizes))
    out = nx.DiGraph()
    for n, data in g.nodes(data=True):
        out.add_node(
            n,
            depth=data["depth"],
            initial=data["initial"],
            violated=",".join(data["violated"]),
            deadlock=data["deadlock"],
            state=_state_text(concrete, data["state"]),
        )
    for a, b, data in g.edges(data=True):
        out.add_edge(a, b, label="; ".join(str(x) for x in data["actions"]))
    return out


def to_dot(result: Any) -> str:
    """Graphviz DOT text: edges labelled with actions, violating states red, deadlocks orange."""
    g = result.graph
    if g is None:
        raise ValueError("explore ran without graph=True")

    def q(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"digraph {q(result.variant or 'explore')} {{", "  node [shape=circle];"]
    for n, data in g.nodes(data=True):
        label = str(n) + ("\\n" + ",".join(data["violated"]) if data["violated"] else "")
        attrs = [f"label={q(label)}"]
        if data["violated"]:
            attrs += ["color=red", "fontcolor=red"]
        elif data["deadlock"]:
            attrs += ["color=orange"]
        if data["initial"]:
            attrs.append("shape=doublecircle")
        lines.append(f"  {n} [{', '.join(attrs)}];")
    for a, b, data in g.edges(data=True):
        label = "; ".join(str(x) for x in data["actions"])
        lines.append(f"  {a} -> {b} [label={q(label)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
