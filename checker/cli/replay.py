"""Replay a trace on the reference engine and compare it with the model after every step.

``kvproof replay TRACE [--variant V]``: TRACE is a ``.jsonl`` trace or an ``.itf.json`` file.
A lasso (a liveness counterexample) replays its stem once, then its loop ``--loops K`` times
(``conformance/lasso.py``): the loop must bring the engine back to where it started, with
what the loop never resolves still unresolved (exit 1 when it is: the lasso shows).
Each model action is forced on the engine (which page the allocator picks, when a write
lands); after each step the abstraction of the engine's state (page owners, page contents,
phases, statuses) must equal the model's. The first divergence is shown side by side.
After the trace the engine drains (every client gets its answer, no new fault; not with
``--no-drain``) and the output oracle (single-node tokens, canaries) judges every 200. The
verdict says what clients saw: a leak (another tenant's canary in a response), a wrong
answer, or an invariant broken on the engine's state only. Exit 1 on any of these or a
divergence, 0 otherwise (also when the variant does not enable the trace).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kvproof.checker.cli.argtypes import int_at_least
from kvproof.checker.cli.consoles import console_for
from kvproof.checker.report.tables import print_table


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="trace file (.jsonl or .itf.json)")
    parser.add_argument(
        "--variant", help="engine and model variant (default: the trace's own variant)"
    )
    parser.add_argument(
        "--max-new-tokens",
        type=int_at_least(1, 4096),
        default=32,
        help="decode length for the oracle (32)",
    )
    parser.add_argument("--no-drain", action="store_true", help="stop at the trace's last step")
    parser.add_argument(
        "--loops",
        type=int_at_least(1, 1000),
        default=3,
        metavar="K",
        help="a lasso: run its loop K times after the stem (3)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def load_trace(path: str, variant_name: str | None) -> Any:
    """A trace from ``.jsonl`` or ``.itf.json`` (ITF needs the variant's protocol)."""
    from kvproof.checker.traces.itf import read_itf
    from kvproof.checker.traces.tracefile import read_jsonl
    from kvproof.model.handoff import build_handoff
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.variant import load_variant

    p = Path(path)
    if not p.exists():
        raise KvproofInputError("no such trace file", path)
    if p.name.endswith(".itf.json"):
        if variant_name is None:
            variant_name = _itf_variant(p)
        if not variant_name:
            raise KvproofInputError("an ITF trace needs --variant", path)
        return read_itf(p, build_handoff(load_variant(variant_name).switches))
    return read_jsonl(p)


def _itf_variant(p: Path) -> str | None:
    """The variant an ITF file names in ``#meta.variant``; malformed files are bad input."""
    from kvproof.spec.errors import KvproofInputError
    from kvproof.spec.files import read_text

    try:
        doc = json.loads(read_text(p, "trace"))
    except json.JSONDecodeError as exc:
        raise KvproofInputError(f"malformed JSON: {exc.msg}", f"{p}:{exc.lineno}") from None
    if not isinstance(doc, dict):
        raise KvproofInputError("not an ITF trace (expected a JSON object)", str(p))
    meta = doc.get("#meta", {})
    if not isinstance(meta, dict):
        raise KvproofInputError("'#meta' must be an object", str(p))
    name = meta.get("variant")
    if name is not None and not (isinstance(name, str) and name):
        raise KvproofInputError("'#meta.variant' must be a variant name", str(p))
    return name


def report_json(report: Any) -> dict[str, Any]:
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
                "request": f.rid - report.offset,
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


def print_report(report: Any, console: Any = None) -> None:
    from rich.table import Table

    console = console or console_for()
    tr = report.trace
    console.print(
        f"replay of a [bold]{tr.variant}[/] trace ({len(tr.steps)} steps, "
        f"{tr.sizes}) on [bold]{report.variant}[/]"
        + (" (alloc pages put in the sender's order)" if tr.meta.get("normalized") else "")
    )
    console.print(f"steps applied on model and engine: {report.steps_applied}")
    if report.lasso is not None:
        lr = report.lasso
        n = len(tr.steps)
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
    if report.lasso is not None and report.lasso.repeats:
        console.print(f"[bold red]{report.lasso.summary()}[/]")
    console.print("what clients saw: " + SHOWS[report.shows])
    if report.crash:
        console.print(f"[bold red]CRASH[/]: {report.crash}")
    if report.exit_code:
        console.print("[bold red]FAILED[/]: " + failure_summary(report))
    else:
        console.print("[green]no divergence, no leak, no invariant broken on the engine[/]")


SHOWS = {
    "leak": "LEAK: another tenant's canary in a response",
    "wrong_answer": "a wrong answer (tokens unlike the single node's), no foreign canary in it",
    "engine_state": "an invariant broken on the engine's state only; no response shows it",
    "nothing": "nothing wrong",
}


def _in_loop(report: Any, step: int) -> str:
    """`` (loop round 2, trace step 8)`` for a step past a lasso's stem."""
    lr, n = report.lasso, len(report.trace.steps)
    if lr is None or step <= lr.loop:
        return ""
    from kvproof.checker.conformance.lasso import loop_step

    size = n - lr.loop
    round_no = (step - lr.loop - 1) // size + 1
    return f" (loop round {round_no}, trace step {loop_step(lr.loop, size, step)})"


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


def run(args: argparse.Namespace) -> int:
    from kvproof.checker.traces.tracefile import check_against
    from kvproof.model.handoff import build_handoff
    from kvproof.spec.variant import load_variant

    # Bad input is found before the engine (and torch) is loaded.
    trace = load_trace(args.trace, args.variant)
    variant = load_variant(args.variant or trace.variant)
    # Names and sizes must fit the trace's own protocol (a different --variant may lack an
    # action: that is "not enabled", not bad input).
    check_against(trace, build_handoff(load_variant(trace.variant).switches), args.trace)
    import torch

    from kvproof.checker.conformance.replay import replay_trace

    torch.set_num_threads(1)  # tiny models: threads only add wake-up latency
    report = replay_trace(
        trace,
        variant,
        drain=not args.no_drain,
        max_new_tokens=args.max_new_tokens,
        loops=args.loops,
    )
    if args.json:
        print(json.dumps(report_json(report), indent=2))
    else:
        print_report(report)
    return report.exit_code
