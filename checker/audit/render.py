"""The audit for people: rich tables (nodes, findings), the danger window, what to do.

Strings from the input (node names, versions, paths) go in as ``Text``, never as markup.
"""

from __future__ import annotations

from rich import box
from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from kvproof.checker.audit.admission import input_limit
from kvproof.checker.audit.danger import Danger
from kvproof.checker.audit.findings import Severity
from kvproof.checker.audit.report import AuditReport

STYLE = {
    Severity.CRITICAL: "bold white on red",
    Severity.HIGH: "bold red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.INFO: "dim",
}


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _nodes(report: AuditReport) -> Table:
    table = Table(title="Nodes", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("node", "role", "engine"):
        table.add_column(col, no_wrap=True)
    for col in ("KV pool", "context", "max input", "page"):
        table.add_column(col, justify="right", no_wrap=True)
    for n in report.deployment.nodes:
        table.add_row(
            Text(n.name),
            n.role,
            Text(f"{n.engine} {n.version or '?'}"),
            _num(n.pool_tokens),
            _num(n.context_len),
            _num(input_limit(n, "engine")),
            _num(n.page_size),
        )
    return table


def _danger(d: Danger) -> Panel:
    lines = Text()
    if d.pool:
        w = d.pool
        lines.append(f"{w.lo:,}..{w.hi:,} tokens", style="bold red")
        lines.append(
            f"  ({w.lengths:,} prompt lengths the API accepts, prefill's pool or context "
            f"cannot hold (> {w.prefill_limit:,}), decode admits)\n"
        )
    if d.engine:
        e = d.engine
        lines.append(f"engine-exact: {e.lo:,}..{e.hi:,}", style="bold")
        rule = (
            "SGLang: min(context-1, pool-1) - 5"
            if d.engine_name == "sglang"
            else "vLLM: max_model_len"
        )
        lines.append(
            f"  (prefill admits <= {e.prefill_limit:,}, decode <= {e.decode_limit:,}; {rule})\n"
        )
    lines.append("what happens: ", style="bold")
    lines.append(d.what_happens)
    if d.match:
        lines.append("\ncatalog: ", style="bold")
        lines.append(d.match.variant + (" (version unknown: assumed)" if d.match.assumed else ""))
        if d.match.fixed:
            lines.append(f"; fixed in {d.match.fixed}")
    return Panel(
        lines,
        title=Text(f"Danger window {d.prefill} -> {d.decode} (Z3)"),
        title_align="left",
        border_style="red" if d.match and d.match.leaks else "yellow",
    )


def _findings(report: AuditReport) -> Table:
    table = Table(title="Findings", title_justify="left")
    table.add_column("severity")
    table.add_column("finding")
    table.add_column("evidence", overflow="fold")
    for f in report.findings:
        table.add_row(
            Text(str(f.severity), style=STYLE[f.severity]),
            Text.assemble((f.id, "bold"), "\n", f.title),
            Text("\n".join(f.evidence)),
        )
    return table


def render(report: AuditReport, console: Console, fail_on: Severity | None) -> None:
    dep = report.deployment
    console.print(
        Text.assemble(
            ("kvproof audit: ", "bold"),
            dep.name,
            f"  advertised context {dep.advertised_context:,} tokens ({dep.advertised_from})",
        )
    )
    console.print(_nodes(report))
    for d in report.dangers:
        console.print(_danger(d))
    if not report.findings:
        console.print(
            Text(
                "No findings: every node's pool covers the advertised context, no "
                "prompt length is rejected by prefill yet admitted by decode.",
                style="bold green",
            )
        )
    else:
        console.print(_findings(report))
        steps = [Text(f"{i}. {a}") for i, a in enumerate(report.recommendations(), start=1)]
        console.print(Panel(Group(*steps), title="What to do", title_align="left"))
    code = report.exit_code(fail_on)
    worst = str(report.worst) if report.worst is not None else "none"
    console.print(
        Text(
            f"{len(report.findings)} finding(s), worst: {worst}; fail-on "
            f"{fail_on if fail_on is not None else 'never'} -> exit {code}",
            style="bold red" if code else "bold green",
        )
    )
