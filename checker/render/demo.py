"""``kvproof demo``'s run for people, and its ``--json`` object (``demo_run.py`` holds the run)."""

from __future__ import annotations

from typing import Any

from kvproof.checker.report.tables import print_table


def render(console: Any, report: Any, *, expected: str | None = None, outcome: str = "") -> None:
    """The deployment's sizes and limits, every response with its verdict, stale pages,
    and (given ``expected``) whether the run shows what the variant predicts."""
    from rich.table import Table

    s = report.sizes
    console.print(
        f"[bold]{report.variant}[/bold] on the deployment of {report.deployment_from}: "
        f"context {s.context_len}, prefill pool {s.prefill_pool_tokens} "
        f"({100 * s.prefill_pool_tokens / s.context_len:.0f}% of context), "
        f"decode pool {s.decode_pool_tokens}, page {s.page_size}"
    )
    window = report.danger_window
    console.print(
        f"max input: prefill {report.prefill_max_input}, decode {report.decode_max_input}; "
        + (f"danger window {window[0]}..{window[1]} tokens" if window else "no danger window")
    )
    columns = ("rid", "tenant", "prompt", "status", "response text", "oracle")
    table = Table(*columns, title="responses")
    for r in report.rows:
        f = r.finding
        if f is None:
            verdict = r.reason or "-"
        elif f.leak:
            verdict = f"[bold red]LEAK[/] (canary of {', '.join(f.foreign_canaries)})"
            verdict += "" if f.tokens_match else "; tokens differ from single node"
        elif f.wrong:
            verdict = "[bold yellow]WRONG ANSWER[/] (tokens differ from single node)"
        else:
            verdict = "[green]ok[/] (= single node)"
        text = r.text.replace("[", "\\[") if r.text else ""
        table.add_row(str(r.rid), r.tenant, str(r.prompt_tokens), str(r.status), text, verdict)
    print_table(console, table)
    for f in report.wrong:
        mark = "[bold red]LEAK[/]" if f.leak else "[bold yellow]WRONG ANSWER[/]"
        console.print(f"{mark} request {f.rid} (tenant {f.tenant}) read stale pages:")
        for first, last, what in _runs(f.stale_pages):
            where = (
                f"table[{first.index}]" if first is last else f"table[{first.index}..{last.index}]"
            )
            ids = [sp.page for sp in f.stale_pages if first.index <= sp.index <= last.index]
            label = "page" if len(ids) == 1 else "pages"
            console.print(f"  {where} ({label} {_ranges(ids)}): {what}")
    if not report.wrong:
        console.print(
            f"[green]no leak[/]: every 200 matches the single-node engine; "
            f"{report.stale_reads} stale page reads"
        )
    if expected is None:
        return
    said = {"leak": "a leak", "wrong_answer": "a wrong answer", "clean": "no leak"}
    if outcome == expected:
        console.print(f"[green]as expected[/]: {report.variant} predicts {said[expected]} (exit 0)")
    else:
        console.print(
            f"[bold red]NOT as expected[/]: {report.variant} predicts {said[expected]}, "
            f"the run shows {said[outcome]} (exit 1)"
        )


def _ranges(ids: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``1-3,7``."""
    parts: list[list[int]] = []
    for i in ids:
        if parts and parts[-1][1] + 1 == i:
            parts[-1][1] = i
        else:
            parts.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in parts)


def _runs(pages: Any) -> list[tuple[Any, Any, str]]:
    """Group consecutive stale pages with the same description into one line."""
    out: list[tuple[Any, Any, str]] = []
    for sp in pages:
        what = sp.describe()
        if out and out[-1][2] == what and out[-1][1].index + 1 == sp.index:
            out[-1] = (out[-1][0], sp, what)
        else:
            out.append((sp, sp, what))
    return out


def demo_json(report: Any) -> dict[str, Any]:
    """The incident's ``--json`` object: sizes, limits, every response and its oracle verdict."""

    def finding(f: Any) -> dict[str, Any] | None:
        if f is None:
            return None
        return {
            "leak": f.leak,
            "wrong": f.wrong,
            "foreign_canaries": list(f.foreign_canaries),
            "tokens_match_single_node": f.tokens_match,
            "stale_pages": [
                {
                    "index": s.index,
                    "page": s.page,
                    "writer_rid": s.writer,
                    "writer_tenant": s.writer_tenant,
                    "filled": s.filled,
                    "valid_slots": s.valid,
                    "read_slots": s.read,
                }
                for s in f.stale_pages
            ],
        }

    return {
        "variant": report.variant,
        "deployment_from": report.deployment_from,
        "sizes": vars(report.sizes),
        "prefill_max_input": report.prefill_max_input,
        "decode_max_input": report.decode_max_input,
        "danger_window": list(report.danger_window) if report.danger_window else None,
        "responses": [
            {
                "rid": r.rid,
                "tenant": r.tenant,
                "prompt_tokens": r.prompt_tokens,
                "status": r.status,
                "text": r.text,
                "reason": r.reason,
                "oracle": finding(r.finding),
            }
            for r in report.rows
        ],
        "leak": bool(report.leaks),
        "wrong_answers": len(report.wrong) - len(report.leaks),
    }
