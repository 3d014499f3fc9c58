"""``kvproof replay``'s report for people, and its ``--json`` object (``replay_run.py`` holds
the run); ``kvproof report``'s line, the page it wrote.

The verdict in words (``SHOWS``, ``failure_summary``: what the clients saw, and what failed,
by name) is ``fuzz``'s too (the engine's confirmation of a model-side finding) and the
HTML report's replay line; duck-typed on the conformance ``ReplayReport``, so that this
module needs no engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvproof.checker.report.tables import print_table

if TYPE_CHECKING:
    from kvproof.checker.runs.replay_run import ReportRun

SHOWS = {
    "leak": "LEAK: another tenant's canary in a response",
    "wrong_answer": "a wrong answer (tokens unlike the single node's), no foreign canary in it",
    "engine_state": "an invariant broken on the engine's state only; no response shows it",
    "nothing": "nothing wrong",
}


def failure_summary(report: Any) -> str:
    """What failed, by name: "leak" only when a response carried another tenant's canary."""
    parts = []
    if report.crash:
        parts.append("the engine crashed")
    if report.divergence is not None:
        parts.append(f"divergence at step {report.divergence.step}")
    if report.lasso is not None and report.lasso.repeats:
        parts.append(report.lasso.summary())
    if report.leak:
        parts.append("leak: a response carried another tenant's canary")
    elif report.failing_answers:
        parts.append("wrong answer: tokens unlike the single-node engine's")
    broken = sorted({n for _, n in report.engine_violations if n != "isolation" or not report.leak})
    if broken:
        parts.append("the engine violates " + ", ".join(broken))
    return "; ".join(parts)


def print_report(report: Any, console: Any, *, raw: bool = False) -> None:
    """The replay's report for people: the steps, a divergence side by side, every
    answer a client got, and what the clients saw. ``raw``: a divergence as the model's
    cells; otherwise the trace's steps as what the engines did."""
    from rich.table import Table

    tr = report.trace
    sizes = f"{tr.sizes.get('Req', 0)} requests, {tr.sizes.get('Page', 0)} decode pages"
    console.print(
        f"replay of a [bold]{tr.variant}[/] trace ({len(tr.steps)} steps, "
        f"{sizes}) on [bold]{report.variant}[/]"
        + (" (alloc pages put in the sender's order)" if tr.meta.get("normalized") else "")
    )
    console.print(f"steps applied on model and engine: {report.steps_applied}")
    if not raw:
        for i, text in enumerate(_words(tr), start=1):
            console.print(f"  {i:>2}. {text}", highlight=False)
    if report.lasso is not None:
        lr = report.lasso
        n = len(tr.steps)
        if lr.loop == n:  # an empty loop: the search's stutter
            console.print(
                f"a lasso: after step {n} the run stays in its last state forever (no fair "
                f"step is enabled there); checked {lr.loops} times, {lr.rounds} held"
            )
        else:
            steps = f"step {n} is" if lr.loop + 1 == n else f"steps {lr.loop + 1}..{n} are"
            console.print(
                f"a lasso: {steps} its loop, run {lr.loops} times after the stem; "
                f"{lr.rounds} of {lr.loops} rounds done"
            )
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
        console.print(
            f"[bold red]DIVERGENCE[/] at step {d.step}{_in_loop(report, d.step)} "
            f"({d.action}): {d.reason}"
        )
        if d.rows and not raw:
            differ = sum(1 for *_, differs in d.rows if differs)
            console.print(f"  model and engine disagree on {differ} cell(s); --raw shows them")
        if d.rows and raw:
            table = Table("cell", "model", "engine", title="model vs engine")
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
        who = f"request r{f.request} (tenant {f.tenant}, engine request {f.rid})"
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
    if report.lasso is not None and report.lasso.repeats:
        console.print(f"[bold red]{report.lasso.summary()}[/]")
    console.print("what clients saw: " + SHOWS[report.shows])
    if report.crash:
        console.print(f"[bold red]CRASH[/]: {report.crash}")
    if report.exit_code:
        console.print("[bold red]FAILED[/]: " + failure_summary(report))
    else:
        console.print("[green]no divergence, no leak, no invariant broken on the engine[/]")


def _words(trace: Any) -> list[str]:
    """The trace's steps as what the engines did (``engine_words``)."""
    from kvproof.checker.report.engine_words import step_words, voice_of
    from kvproof.checker.report.trace_view import trace_rows
    from kvproof.model.handoff import protocol_of
    from kvproof.model.lang.trace import ReplayError
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.variant import load_variant

    try:
        variant = load_variant(trace.variant)
        rows = trace_rows(protocol_of(variant, assumed=False), trace)
    except (KvproofInputError, ReplayError):  # a user protocol's trace: no handoff words
        return []
    return step_words(rows, voice_of(variant.engine, variant.switches.transfer_mode))


def _in_loop(report: Any, step: int) -> str:
    """`` (loop round 2, trace step 8)`` for a step past a lasso's stem."""
    lr, n = report.lasso, len(report.trace.steps)
    if lr is None or step <= lr.loop:
        return ""
    from kvproof.checker.conformance.verdict import loop_step

    size = n - lr.loop
    round_no = (step - lr.loop - 1) // size + 1
    return f" (loop round {round_no}, trace step {loop_step(lr.loop, size, step)})"


def replay_json(report: Any) -> dict[str, Any]:
    """``kvproof replay --json``: the steps applied, a divergence cell by cell, the answers."""
    d = report.divergence
    return {
        "variant": report.variant,
        "trace_variant": report.trace.variant,
        "steps": len(report.trace.steps),
        "steps_applied": report.steps_applied,
        "not_enabled": report.not_enabled,
        "divergence": None
        if d is None
        else {
            "step": d.step,
            "action": d.action,
            "reason": d.reason,
            "cells": [{"cell": c, "model": m, "engine": e, "differs": x} for c, m, e, x in d.rows],
        },
        "model_violations": [{"step": s, "invariant": n} for s, n in report.model_violations],
        "engine_violations": [{"step": s, "invariant": n} for s, n in report.engine_violations],
        "responses_200": [
            {
                "request": f.request,
                "tenant": f.tenant,
                "text": f.text,
                "leak": bool(f.foreign_canaries),
                "foreign_canaries": list(f.foreign_canaries),
                "tokens_match_single_node": f.tokens_match,
            }
            for f in report.findings
        ],
        "responses": [r.to_json() for r in report.responses],
        "drained_steps": list(report.drained),
        "leak": report.leak,
        "shows": report.shows,
        "crash": report.crash,
        "lasso": None if report.lasso is None else report.lasso.to_json(),
        "exit_code": report.exit_code,
    }


def print_written(run: ReportRun) -> None:
    """``kvproof report``: the page written, and the replay's verdict when there was one
    (plain ``print``: one line, never wrapped)."""
    print(f"wrote {run.out}" + (f" ({run.summary['line']})" if run.summary else ""))
