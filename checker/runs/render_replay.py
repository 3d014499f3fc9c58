"""``kvproof replay``'s report for people (``replay_run.py`` holds the run)."""

from __future__ import annotations

from typing import Any

from kvproof.checker.report.replay_text import SHOWS, failure_summary
from kvproof.checker.report.tables import print_table


def print_report(report: Any, console: Any) -> None:
    """The replay's report for people: the steps, a divergence side by side, every
    answer a client got, and what the clients saw."""
    from rich.table import Table

    tr = report.trace
    console.print(
        f"replay of a [bold]{tr.variant}[/] trace ({len(tr.steps)} steps, "
        f"{tr.sizes}) on [bold]{report.variant}[/]"
        + (" (alloc pages put in the sender's order)" if tr.meta.get("normalized") else "")
    )
    console.print(f"steps applied on model and engine: {report.steps_applied}")
    if report.not_enabled:
        console.print(
            f"[yellow]not enabled[/]: {report.not_enabled} is not a step of {report.variant} "
            "(the engine refuses it too); the replay stops there"
        )
        console.print(f"  model state: {report.why_not}")
    for step, name in report.model_violations:
        console.print(f"model: invariant [bold]{name}[/] violated after step {step}")
    for step, name in report.engine_violations:
        console.print(f"engine: invariant [bold red]{name}[/] violated after step {step}")
    d = report.divergence
    if d is not None:
        console.print(f"[bold red]DIVERGENCE[/] at step {d.step} ({d.action}): {d.reason}")
        if d.rows:
            table = Table(title="model vs engine")
            for col in ("cell", "model", "engine"):
                table.add_column(col)
            for cell, m, e, differs in d.rows:
                style = "bold red" if differs else ""
                table.add_row(cell, m, e, style=style)
            print_table(console, table)
    if report.drained:
        console.print(
            f"drain: {len(report.drained)} more steps, no new fault, until every client "
            "had its answer"
        )
    for f in report.findings:
        who = f"request r{f.rid - report.offset} (tenant {f.tenant}, engine request {f.rid})"
        text = f.text.replace("[", "\\[")
        if f.foreign_canaries:
            canaries = ", ".join(f.foreign_canaries)
            console.print(
                f"[bold red]LEAK[/] {who} got 200: {text!r} (canary of tenant {canaries})"
            )
        elif not f.tokens_match:
            console.print(
                f"[bold yellow]WRONG ANSWER[/] {who} got 200: {text!r} (tokens differ from the "
                "single-node engine; no other tenant's canary in it)"
            )
        else:
            console.print(f"[green]ok[/] {who} got 200, same tokens as single node")
        if f.wrong:
            for sp in f.stale_pages:
                console.print(f"  table[{sp.index}] page {sp.page}: {sp.describe()}")
    console.print("what clients saw: " + SHOWS[report.shows])
    if report.crash:
        console.print(f"[bold red]CRASH[/]: {report.crash}")
    if report.exit_code:
        console.print("[bold red]FAILED[/]: " + failure_summary(report))
    else:
        console.print("[green]no divergence, no leak, no invariant broken on the engine[/]")
