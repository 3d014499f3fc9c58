"""``explore``'s state graph, drawn and exported (``kvproof explore --html``, ``--dot``,
``--graphml``).

The page draws small instances (a few hundred states) as SVG in the report's style: a node
per state, in rows by distance from the initial states, an edge per transition. A violating
state is a thick ring with a cross and the invariant's name in its tooltip, a deadlock a
dashed ring with a pause sign, an initial state a double ring: shapes and symbols, not
colour alone. Hover a node for its non-default cells, an edge for its actions. The exports
are Graphviz DOT and a GraphML-ready graph with plain attributes.
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import Any

from kvproof.checker.render.prove_html import nondefault_cells
from kvproof.checker.report.html_page import document, section, sizes_text, variant_box
from kvproof.model.lang.concrete import Concrete
from kvproof.model.lang.instance import Instance

MAX_NODES = 600
GAP_X = 34
GAP_Y = 70
R = 11


def _graph(result: Any) -> tuple[list[tuple[int, Any, str]], list[tuple[int, int, str]]]:
    """The graph once for its three writers: each state (id, attributes, ``violated``,
    ``deadlock`` or ``""``) and each transition (from, to, its actions as one label)."""
    if result.graph is None:
        raise ValueError("explore ran without graph=True")
    nodes = [
        (n, data, "violated" if data["violated"] else "deadlock" if data["deadlock"] else "")
        for n, data in result.graph.nodes(data=True)
    ]
    edges = [
        (a, b, "; ".join(str(x) for x in data["actions"]))
        for a, b, data in result.graph.edges(data=True)
    ]
    return nodes, edges


def graph_page(result: Any, protocol: Any, variant: Any = None) -> str:
    """``kvproof explore --html``: counts, verdicts and the state graph (``protocol``, the
    one explored, names the states' cells)."""
    name = result.variant or "explore"
    sizes = sizes_text(result.sizes)
    legend_text = (
        "<p class='note'>Rows are BFS depths from the initial states (double ring). "
        "✖ a state violating an invariant (thick ring), ⏸ a deadlock (dashed ring); hover a "
        "state for its cells, an edge for its actions.</p>"
    )
    body = (
        f"<h1>{escape(name)}: state graph</h1><p class='subtitle'>{sizes}</p>"
        + summary(result)
        + section(
            "State graph",
            legend_text + f'<div class="chart-scroll">{render(result, protocol)}</div>',
            "graph-section",
        )
    )
    if variant is not None:
        body += section(f"Variant {variant.name}", variant_box(variant), "variant-section")
    return document(f"kvproof explore: {name}", f'<div class="kvproof-report">{body}</div>')


def render(result: Any, protocol: Any) -> str:
    """The SVG (and a note when the graph was cut to ``MAX_NODES``); ``protocol`` (the one
    explored) names each state's cells: the result itself is plain data."""
    every, edges = _graph(result)
    concrete = Concrete(Instance(protocol, result.sizes))
    nodes = sorted(every, key=lambda node: (node[1]["depth"], node[0]))[:MAX_NODES]
    layers: dict[int, list[int]] = defaultdict(list)
    for n, data, _ in nodes:
        layers[data["depth"]].append(n)
    widest = max((len(v) for v in layers.values()), default=1)
    width = max(widest * GAP_X + 80, 300)
    height = (max(layers, default=0) + 1) * GAP_Y + 40
    pos = {}
    for depth, ids in layers.items():
        span = len(ids) * GAP_X
        x0 = (width - span) / 2 + GAP_X / 2
        for i, n in enumerate(ids):
            pos[n] = (round(x0 + i * GAP_X, 1), 30 + depth * GAP_Y)
    parts = [
        f'<svg class="graph" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f"<title>state graph of {escape(result.variant or 'explore')}</title>"
    ]
    for depth in layers:
        parts.append(f'<text class="depth" x="4" y="{34 + depth * GAP_Y}">{depth}</text>')
    for a, b, label in edges:
        if a in pos and b in pos:
            (x1, y1), (x2, y2) = pos[a], pos[b]
            parts.append(
                f'<line class="edge" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}">'
                f"<title>{escape(label)}</title></line>"
            )
    for n, data, kind in nodes:
        x, y = pos[n]
        sym = {"violated": "✖", "deadlock": "⏸"}.get(kind, "")
        cells = nondefault_cells(concrete, data["state"])
        tip = f"state {n}, depth {data['depth']}"
        if data["violated"]:
            tip += f"; VIOLATES {', '.join(data['violated'])}"
        if data["deadlock"]:
            tip += "; DEADLOCK"
        tip += ": " + (" ".join(f"{k}{' ' + v if v else ''}" for k, v in cells.items()) or "init")
        ring = f'<circle cx="{x}" cy="{y}" r="{R + 3}" fill="none" class="ring"/>'
        parts.append(
            f'<g class="{f"node {kind}".rstrip()}" data-state="{n}"><title>{escape(tip)}</title>'
            f"{ring if data['initial'] else ''}"
            f'<circle cx="{x}" cy="{y}" r="{R}"/>'
            f'<text x="{x}" y="{y + 3.5}" text-anchor="middle">{sym or n}</text></g>'
        )
    parts.append("</svg>")
    if len(every) > MAX_NODES:
        parts.append(
            f'<p class="note">Only the {MAX_NODES} states nearest the initial states are drawn '
            f"(of {len(every)}).</p>"
        )
    return "".join(parts)


def summary(result: Any) -> str:
    """Counts and verdicts above the graph."""
    rows = [
        ("states", f"{result.states:,}"),
        ("transitions", f"{result.transitions:,}"),
        ("diameter (BFS depth)", str(result.diameter)),
        ("deadlocks", f"{result.deadlocks:,}"),
        ("truncated", "yes" if result.truncated else "no"),
    ]
    for name in result.invariants:
        ok = result.holds(name)
        rows.append((name, "✔ holds" if ok else f"✖ violated ({result.violating[name]:,} states)"))
    body = "".join(
        f"<tr><th scope='row'>{escape(a)}</th><td>{escape(b)}</td></tr>" for a, b in rows
    )
    return f'<table class="explore-summary"><tbody>{body}</tbody></table>'


def _state_text(concrete: Any, state: Any) -> str:
    """The cells that differ from their defaults, e.g. ``dphase(r0)=queued owns(r0, p1)``."""
    cells = nondefault_cells(concrete, state).items()
    return " ".join(name + (f"={v[2:]}" if v else "") for name, v in cells)


def graphml_graph(result: Any, protocol: Any) -> Any:
    """The state graph with plain attributes only (GraphML takes str, int, float, bool);
    ``protocol`` (the one explored) names the cells of each state."""
    import networkx as nx

    nodes, edges = _graph(result)
    concrete = Concrete(Instance(protocol, result.sizes))
    out = nx.DiGraph()
    for n, data, _ in nodes:
        out.add_node(
            n,
            depth=data["depth"],
            initial=data["initial"],
            violated=",".join(data["violated"]),
            deadlock=data["deadlock"],
            state=_state_text(concrete, data["state"]),
        )
    for a, b, label in edges:
        out.add_edge(a, b, label=label)
    return out


def to_dot(result: Any) -> str:
    """Graphviz DOT text: edges labelled with actions, violating states red, deadlocks orange."""
    nodes, edges = _graph(result)

    def q(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [f"digraph {q(result.variant or 'explore')} {{", "  node [shape=circle];"]
    colors = {"violated": ["color=red", "fontcolor=red"], "deadlock": ["color=orange"]}
    for n, data, kind in nodes:
        label = str(n) + ("\\n" + ",".join(data["violated"]) if data["violated"] else "")
        attrs = [f"label={q(label)}", *colors.get(kind, [])]
        if data["initial"]:
            attrs.append("shape=doublecircle")
        lines.append(f"  {n} [{', '.join(attrs)}];")
    lines += [f"  {a} -> {b} [label={q(label)}];" for a, b, label in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"
