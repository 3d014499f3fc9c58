"""The audit for people: each node's facts stacked, the danger window, findings, what to do.

Everything wraps at the console's width (80 columns readable): a node is a heading line
and indented ``fact value`` lines, a finding is its severity and id, then its title, what
it rests on and where it was read. Strings from the input (node names, versions, paths)
go in as ``Text``, never as markup, and pass ``redact.scrub``.
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.text import Text

from kvproof.ops.audit.admission import input_limit
from kvproof.ops.audit.danger import Danger
from kvproof.ops.audit.deployment import Node
from kvproof.ops.audit.findings import AuditFinding, Severity
from kvproof.ops.audit.redact import scrub
from kvproof.ops.audit.report import AuditReport
from kvproof.ops.audit.run import AuditRun
from kvproof.ops.audit.vllm_rules import lease_s, transfer_mode

STYLE = {
    Severity.CRITICAL: "bold white on red",
    Severity.HIGH: "bold red",
    Severity.MEDIUM: "yellow",
    Severity.LOW: "cyan",
    Severity.INFO: "dim",
}


def _num(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _flag(value: bool | None) -> str:
    return "unknown" if value is None else ("on" if value else "off")


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:g} s"


def _facts(n: Node) -> list[tuple[str, str]]:
    rows = [
        ("KV pool", f"{_num(n.pool_tokens)} tokens"),
        ("context", _num(n.context_len)),
        ("max input", _num(input_limit(n, "engine"))),
        ("page size", _num(n.page_size)),
    ]
    if n.engine == "sglang" and n.role in ("prefill", "decode"):
        rows += [
            ("backend", n.transfer_backend or "-"),
            ("kv checksum", _flag(n.transfer_checksum)),
            ("deferred release", _flag(n.deferred_release)),
            ("release timeout", _secs(n.release_timeout_s)),
            ("waiting timeout", _secs(n.waiting_timeout_s)),
            ("environment", "exposed" if n.env_exposed else "not exposed"),
        ]
        if n.decode_radix_cache:
            rows.append(("decode radix", "on"))
    if n.engine == "vllm" and n.kv_connector:
        rows += [
            ("connector", f"{n.kv_connector} ({transfer_mode(n) or '?'})"),
            ("lease", _secs(lease_s(n))),
        ]
        if n.lease_expired_reads:
            rows.append(("expired reads", str(n.lease_expired_reads)))
    if n.slowest_transfer_s is not None:
        rows.append(("slowest transfer", f"> {n.slowest_transfer_s:g} s"))
    return rows


def _node(n: Node) -> Group:
    head = Text.assemble(
        (scrub(n.name), "bold"), f"  {n.role}, ", scrub(f"{n.engine} {n.version or '?'}")
    )
    width = max(len(k) for k, _ in _facts(n))
    lines = [Text.assemble(f"  {k:<{width}}  ", scrub(v)) for k, v in _facts(n)]
    return Group(head, *lines)


def _nodes(report: AuditReport) -> Group:
    return Group(Text("Nodes", style="bold"), *(_node(n) for n in report.deployment.nodes))


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
        title=Text(scrub(f"Danger window {d.prefill} -> {d.decode} (Z3)")),
        title_align="left",
        border_style="red" if d.match and d.match.leaks else "yellow",
    )


def _finding(f: AuditFinding) -> Group:
    head = Text.assemble((f" {f.severity} ", STYLE[f.severity]), " ", (f.id, "bold"))
    body = [Text(scrub(f.title))]
    if f.variant or f.assumption:
        body.append(
            Text.assemble(
                ("rests on: ", "dim"),
                f"variant {f.variant or '-'}, assumption {f.assumption or '-'}",
            )
        )
    body += [Text.assemble(("seen at: ", "dim"), scrub(e)) for e in f.evidence]
    return Group(head, Padding(Group(*body), (0, 0, 0, 2), expand=False))


def render(run: AuditRun, console: Console) -> None:
    """The run for people (``run.to_json()`` is the one for machines)."""
    report, fail_on = run.report, run.fail_on
    dep = report.deployment
    console.print(
        Text.assemble(
            ("kvproof audit: ", "bold"),
            scrub(dep.name),
            f"  advertised context {dep.advertised_context:,} tokens ",
            scrub(f"({dep.advertised_from})"),
        )
    )
    console.print(_nodes(report))
    for d in report.dangers:
        console.print(_danger(d))
    if not report.findings:
        console.print(
            Text(
                "No findings: every node's pool covers the advertised context, no "
                "prompt length is rejected by prefill yet admitted by decode, and the PD "
                "settings meet the model's assumptions.",
                style="bold green",
            )
        )
    else:
        console.print(Text("Findings", style="bold"))
        for f in report.findings:
            console.print(_finding(f))
        steps = [Text(f"{i}. {a}") for i, a in enumerate(report.recommendations(), start=1)]
        console.print(Panel(Group(*steps), title="What to do", title_align="left"))
    code = run.exit_code
    worst = str(report.worst) if report.worst is not None else "none"
    console.print(
        Text(
            f"{len(report.findings)} finding(s), worst: {worst}; fail-on "
            f"{fail_on if fail_on is not None else 'never'} -> exit {code}",
            style="bold red" if code else "bold green",
        )
    )
