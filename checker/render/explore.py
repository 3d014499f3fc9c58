"""``kvproof explore``'s run for people (``explore_run.py`` holds the run), or as ``--json``:
the search's counts, per invariant its verdict and shortest counterexample, and a deadlock,
each trace as rows of steps (action, args, changed cells)."""

from __future__ import annotations

from typing import Any

from kvproof.checker.report.tables import print_table
from kvproof.checker.report.trace_view import initial_choices


def render(console: Any, result: Any, protocol: Any) -> None:
    """The counts, the verdicts, the shortest counterexample and a deadlock."""
    from rich.table import Table

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
    verdicts = Table("invariant", "verdict", "shortest", "violating states", title="invariants")
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

    start = ", ".join(initial_choices(protocol, trace)) or "defaults only"
    table = Table("#", "action", "args", "changes", title=title, caption=f"initial: {start}")
    for row in steps(trace, protocol):
        changes = escape("; ".join(row["changes"])) or "-"
        if row["violated"]:
            changes += f"  [bold red]violates {', '.join(row['violated'])}[/]"
        table.add_row(str(row["step"]), row["action"], ", ".join(row["args"]), changes)
    print_table(console, table)


def steps(trace: Any, protocol: Any) -> list[dict[str, Any]]:
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
                    f"{concrete.inst.describe(var, a)}: {old} -> {new}"
                    for var, a, old, new in concrete.diff(states[k], states[k + 1])
                ],
                "violated": concrete.violated(states[k + 1]),
            }
        )
    return rows


def as_json(result: Any, protocol: Any) -> dict[str, Any]:
    def trace(t: Any) -> dict[str, Any] | None:
        if t is None:
            return None
        return {
            "length": len(t),
            "initial": initial_choices(protocol, t),
            "steps": steps(t, protocol),
        }

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
