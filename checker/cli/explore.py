"""Explicit-state search of a small instance: state counts, shortest counterexamples, deadlocks.

``kvproof explore VARIANT --requests N --pages M``: breadth-first search of every reachable
state (TLC style, pages reduced by symmetry), per invariant a shortest counterexample
(replayed), deadlocks (requests stuck holding pages), and optionally the state graph as
DOT or GraphML. The slow baseline next to ``kvproof check`` (BMC) and ``kvproof prove``.
Exit 0 no violation, 1 a violation, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kvproof.checker.cli.argtypes import positive_float, positive_int
from kvproof.checker.cli.consoles import console_for
from kvproof.checker.report.tables import print_table


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variant", metavar="VARIANT", help="variant name or .toml path")
    parser.add_argument("--requests", type=positive_int, default=2, help="requests (default 2)")
    parser.add_argument("--pages", type=positive_int, default=3, help="decode pages (default 3)")
    parser.add_argument("--max-states", type=positive_int, metavar="N", help="stop after N states")
    parser.add_argument(
        "--max-seconds", type=positive_float, metavar="S", help="stop after S seconds (> 0)"
    )
    parser.add_argument(
        "--no-symmetry", action="store_true", help="do not reduce states under page permutations"
    )
    parser.add_argument(
        "--stop-at-violation",
        action="store_true",
        help="do not expand violating states (TLC): shortest traces without earlier violations",
    )
    parser.add_argument("--dot", metavar="FILE", help="write the state graph as Graphviz DOT")
    parser.add_argument("--graphml", metavar="FILE", help="write the state graph as GraphML")
    parser.add_argument("--html", metavar="OUT.html", help="write the state graph as HTML/SVG")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--protocol", help="user protocol factory 'module:attr'")
    parser.add_argument("--variants-dir", type=Path, help="folder of variant TOMLs")


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.cli.selection import check_names

    check_names([args.variant], args.variants_dir, args.protocol)
    from kvproof.checker.cli.paths import check_input_dir, check_output_file
    from kvproof.checker.verify.protocols import load_protocol, resolve_variants
    from kvproof.model.search.explore import explore
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.files import write_text_atomic

    check_output_file(args.dot, "--dot")
    check_output_file(args.graphml, "--graphml")
    check_input_dir(args.variants_dir, "--variants-dir")
    user = load_protocol(args.protocol) if args.protocol else None
    (variant,) = resolve_variants([args.variant], False, args.variants_dir, user)
    check_output_file(args.html, "--html")
    if user:
        protocol = user.factory(variant.switches)
    else:  # kvproof's handoff under the variant's assumptions
        from kvproof.model.handoff.assumptions import handoff_for

        protocol = handoff_for(variant)
    if set(protocol.sorts) != {"Req", "Page"}:
        raise KvproofInputError(
            f"--requests/--pages size the sorts Req and Page; this protocol's sorts are "
            f"{', '.join(protocol.sorts)}",
            "--protocol",
        )
    sizes = {"Req": args.requests, "Page": args.pages}
    kwargs: dict[str, Any] = dict(
        variant=variant.name,
        symmetry=() if args.no_symmetry else None,  # None: the protocol's explore_symmetry
        stop_at_violation=args.stop_at_violation,
        max_states=args.max_states,
        max_seconds=args.max_seconds,
        graph=bool(args.dot or args.graphml or args.html),
    )
    if args.json:
        result = explore(protocol, sizes, **kwargs)
    else:
        result = _with_progress(protocol, sizes, kwargs)
    if args.dot:
        write_text_atomic(args.dot, to_dot(result))
    if args.graphml:
        import networkx as nx

        graphml = nx.generate_graphml(graphml_graph(result, protocol))
        write_text_atomic(args.graphml, "\n".join(graphml))
    if args.html:
        from kvproof.checker.report.html_page import graph_page

        write_text_atomic(args.html, graph_page(result, protocol, variant))
    files = [str(f) for f in (args.dot, args.graphml, args.html) if f]
    if args.json:
        print(json.dumps({**as_json(result, protocol), "files": files}, indent=2))
    else:
        _print_rich(result, protocol)

        from kvproof.checker.cli.written import wrote

        wrote(console_for(), files)
    return 1 if result.violated else 0


def _with_progress(protocol: Any, sizes: dict[str, int], kwargs: dict[str, Any]) -> Any:
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from kvproof.model.search.explore import explore

    console = console_for()
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        transient=True,
        console=console,
        disable=not console.is_terminal,  # a pipe gets no progress (and no blank line)
    ) as bar:
        task = bar.add_task("exploring")

        def progress(states: int, depth: int, left: int) -> None:
            bar.update(task, description=f"{states:,} states, depth {depth}, {left:,} left")

        return explore(protocol, sizes, progress=progress, **kwargs)


# -- rendering -------------------------------------------------------------------------------


def _describe(concrete: Any, var: str, args: tuple[int, ...]) -> str:
    return str(concrete.inst.describe(var, args))


def _steps(trace: Any, protocol: Any) -> list[dict[str, Any]]:
    """One row per step: the action, its arguments, the cells it changed."""
    from kvproof.model.lang.concrete import Concrete
    from kvproof.model.lang.instance import Instance, element_name
    from kvproof.model.lang.trace import replay

    concrete = Concrete(Instance(protocol, trace.sizes))
    states = replay(trace, concrete)
    rows = []
    for k, step in enumerate(trace.steps):
        params = protocol.action(step.action).params
        rows.append(
            {
                "step": k + 1,
                "action": step.action,
                "args": [element_name(s, a) for s, a in zip(params, step.args, strict=True)],
                "changes": [
                    f"{_describe(concrete, var, a)}: {old} -> {new}"
                    for var, a, old, new in concrete.diff(states[k], states[k + 1])
                ],
                "violated": concrete.violated(states[k + 1]),
            }
        )
    return rows


def _initial(trace: Any, protocol: Any) -> list[str]:
    """The initial state's free choices that are not defaults (e.g. over_p(r0))."""
    from kvproof.model.lang.instance import Instance

    inst = Instance(protocol, trace.sizes)
    return [
        inst.describe(var, args)
        for var, cells in trace.init.items()
        for args, value in cells.items()
        if value != protocol.var(var).default
    ]


def as_json(result: Any, protocol: Any) -> dict[str, Any]:
    def trace(t: Any) -> dict[str, Any] | None:
        if t is None:
            return None
        return {"length": len(t), "initial": _initial(t, protocol), "steps": _steps(t, protocol)}

    return {
        "variant": result.variant,
        "sizes": result.sizes,
        "states": result.states,
        "transitions": result.transitions,
        "initial_states": result.initial,
        "diameter": result.diameter,
        "terminal": result.terminal,
        "deadlocks": result.deadlocks,
        "truncated": result.truncated,
        "symmetry": list(result.symmetry),
        "stop_at_violation": result.stop_at_violation,
        "seconds": round(result.seconds, 3),
        "invariants": {
            name: {
                "verdict": "holds" if result.holds(name) else "violated",
                "shortest": result.shortest(name),
                "violating_states": result.violating[name],
                "counterexample": trace(result.counterexamples.get(name)),
            }
            for name in result.invariants
        },
        "deadlock": trace(result.deadlock),
    }


def _print_rich(result: Any, protocol: Any) -> None:
    from rich.table import Table

    console = console_for()
    sizes = f"{result.sizes['Req']} requests, {result.sizes['Page']} pages"
    counts = Table(title=f"explore {result.variant}: {sizes}")
    counts.add_column("measure")
    counts.add_column("value", justify="right")
    reduction = ", ".join(result.symmetry) or "none"
    for name, value in (
        ("states", f"{result.states:,}"),
        ("transitions", f"{result.transitions:,}"),
        ("initial states", f"{result.initial:,}"),
        ("diameter (BFS depth)", str(result.diameter)),
        ("terminal states", f"{result.terminal:,}"),
        ("deadlocks", f"{result.deadlocks:,}"),
        ("symmetry reduction", reduction),
        ("seconds", f"{result.seconds:.2f}"),
    ):
        counts.add_row(name, value)
    print_table(console, counts)
    if result.truncated:
        console.print(
            "[yellow]truncated[/]: the state or time budget ran out; counts are lower "
            "bounds and 'holds' means 'not violated in the explored part'"
        )
    verdicts = Table(title="invariants")
    for col in ("invariant", "verdict", "shortest", "violating states"):
        verdicts.add_column(col)
    for name in result.invariants:
        ok = result.holds(name)
        verdicts.add_row(
            name,
            "[green]holds[/]" if ok else "[bold red]violated[/]",
            "-" if ok else str(result.shortest(name)),
            f"{result.violating[name]:,}",
        )
    print_table(console, verdicts)
    if result.counterexamples:
        name, trace = min(result.counterexamples.items(), key=lambda kv: len(kv[1]))
        _print_trace(
            console, f"shortest counterexample: {name} ({len(trace)} steps)", trace, protocol
        )
    if result.deadlock is not None:
        _print_trace(
            console, f"a deadlock ({result.deadlocks:,} in all)", result.deadlock, protocol
        )


def _print_trace(console: Any, title: str, trace: Any, protocol: Any) -> None:
    from rich.markup import escape
    from rich.table import Table

    initial = ", ".join(_initial(trace, protocol)) or "defaults only"
    table = Table(title=title, caption=f"initial: {initial}")
    for col in ("#", "action", "args", "changes"):
        table.add_column(col)
    for row in _steps(trace, protocol):
        changes = escape("; ".join(row["changes"])) or "-"
        if row["violated"]:
            changes += f"  [bold red]violates {', '.join(row['violated'])}[/]"
        table.add_row(str(row["step"]), row["action"], ", ".join(row["args"]), changes)
    print_table(console, table)


# -- graph export ----------------------------------------------------------------------------


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
