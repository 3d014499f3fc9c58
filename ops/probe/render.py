"""The probe's report for people (``ProbeReport.to_json()`` is the one for machines).

JSON keys: ``url, model, context, context_from, chars_per_token, boundary_tokens, fit,
requests, seconds, stopped_by_budget, findings[{kind, detail, evidence}], samples[...]``,
``verdict`` (``finding``, ``inconclusive``: the budget ran out first, or ``clean``),
``exit_code`` (0 only when clean). No API key appears anywhere (tenants are "A" and "B").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kvproof.ops.probe.findings import ProbeReport

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


def render(
    report: ProbeReport,
    console: Console | None = None,
    print_table: Callable[[Console, Table], None] | None = None,
) -> None:
    """For people; ``console``: the CLI's (``cli/consoles.py``: as wide as its content in
    a pipe, so no cell is cut), a default rich console when called from a notebook;
    ``print_table(console, table)``: the CLI's pipe-safe tables (``report/tables.py``,
    a room the probe does not import: it runs on a laptop with ``spec`` alone)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console or Console()
    console.print(
        f"[bold]probe[/bold] {report.url} model {report.model}: context {report.context} "
        f"(from {report.context_from}), {report.requests} requests in {report.seconds:.1f} s"
        + (
            f" [yellow](budget of {report.stopped_by_budget} spent)[/]"
            if report.stopped_by_budget
            else ""
        )
    )
    console.print(
        "longest accepted prompt: "
        + (f"{report.boundary_tokens} tokens" if report.boundary_tokens else "none below context")
    )
    if report.fit:
        f = report.fit
        console.print(
            f"TTFT fit ({f.points} shortest accepted prompts): {1000 * f.intercept_s:.1f} ms + "
            f"{1e6 * f.slope_s_per_token:.1f} us/token (residual {1000 * f.resid_s:.1f} ms)"
        )
    table = Table(title="tenant B's accepted prompts (time to first token)")
    for col in ("tokens", "status", "TTFT ms", "answer"):
        table.add_column(col)
    rows = sorted((s for s in report.samples if s.tenant == "B"), key=lambda s: s.prompt_chars)
    for s in rows:
        table.add_row(
            str(s.prompt_tokens or "-"),
            str(s.status),
            f"{1000 * s.ttft_s:.1f}",
            escape(s.text[:60]),
        )
    if print_table is None:
        console.print(table)
    else:
        print_table(console, table)
    if report.verdict == "inconclusive":
        console.print(
            f"[bold yellow]INCONCLUSIVE[/]: the budget of {report.stopped_by_budget} ran out "
            "before the probe was done; no finding so far, but not shown clean "
            "(raise --max-requests / --max-seconds)"
        )
        return
    if not report.findings:
        console.print(
            "[green]clean[/]: no foreign canary, no 200 past a reject, "
            "no answer faster than its prefill, identical prompts answered alike"
        )
        return
    for found in report.findings:
        console.print(f"[bold red]{found.kind}[/] {escape(found.detail)}")
        if found.kind == "foreign_canary":
            console.print(f"    answer: {escape(str(found.evidence['text']))}")
