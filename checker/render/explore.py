"""``kvproof explore``'s run for people (``explore_run.py`` holds the run)."""

from __future__ import annotations

from typing import Any

from kvproof.checker.render.explore_json import steps
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

    start = ", ".join(initial_choices(protocol, trace)) or "defaults only"
    table = Table(title=title, caption=f"initial: {start}")
    for col in ("#", "action", "args", "changes"):
        table.add_column(col)
    for row in steps(trace, protocol):
        changes = escape("; ".join(row["changes"])) or "-"
        if row["violated"]:
            changes += f"  [bold red]violates {', '.join(row['violated'])}[/]"
        table.add_row(str(row["step"]), row["action"], ", ".join(row["args"]), changes)
    print_table(console, table)
