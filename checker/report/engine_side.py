"""The engine side of a replayed trace: what each client got, beside the single-node answer.

Takes plain data (``ClientResponse.to_json()`` rows from ``checker/conformance``, or the
same keys from anywhere), so the report never runs the engine itself. A foreign canary
in a response is marked with a flag and the word "foreign" as well as a colour. A row says
LEAK only for a foreign canary (replay's ``leak``); a 200 whose tokens differ from the
single node's without one says WRONG ANSWER (replay's ``wrong_answer``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any


def mark_canaries(text: str, canaries: Sequence[Sequence[str]], own: str) -> str:
    """``text`` as HTML with every canary found wrapped in a ``<mark>``."""
    spans: list[tuple[int, int, str]] = []
    for tenant, canary in canaries:
        start = text.find(canary)
        while start >= 0:
            spans.append((start, start + len(canary), tenant))
            start = text.find(canary, start + len(canary))
    spans.sort()
    out, at = [], 0
    for start, end, tenant in spans:
        if start < at:
            continue
        out.append(escape(text[at:start]))
        foreign = tenant != own
        cls = "canary foreign" if foreign else "canary"
        flag = f"⚑ foreign (tenant {tenant}) " if foreign else ""
        out.append(
            f'<mark class="{cls}" data-tenant="{escape(tenant)}">'
            f'<span class="flag">{escape(flag)}</span>{escape(text[start:end])}</mark>'
        )
        at = end
    out.append(escape(text[at:]))
    return "".join(out)


def render(responses: Sequence[Mapping[str, Any]], summary: Mapping[str, Any] | None = None) -> str:
    """The responses table; ``summary`` (optional) carries the replay's verdict line."""
    head = "".join(
        f'<th scope="col">{h}</th>'
        for h in ("request", "tenant", "status", "what the client got", "single-node engine")
    )
    rows = []
    for r in responses:
        status = r.get("status")
        leak = bool(r.get("foreign"))
        wrong = not leak and status == 200 and not r.get("tokens_match", True)
        cls, verdict = "response", ""
        if leak:
            cls, verdict = "response leak", '<span class="leak-mark">✖ LEAK</span> '
        elif wrong:
            cls, verdict = "response wrong", '<span class="wrong-mark">≠ WRONG ANSWER</span> '
        got = mark_canaries(str(r.get("text", "")), r.get("canaries", ()), str(r.get("tenant")))
        if not got and r.get("reason"):
            got = f'<span class="reason">({escape(str(r["reason"]))})</span>'
        single = escape(str(r.get("single_node", ""))) if status == 200 else "—"
        shown = "— (no answer)" if status is None else str(status)
        same = ""
        if status == 200:
            same = (
                '<br><span class="same">= same tokens</span>'
                if r.get("tokens_match")
                else '<br><span class="differs">≠ tokens differ</span>'
            )
        rows.append(
            f'<tr class="{cls}" data-request="r{r.get("request")}">'
            f'<th scope="row">r{escape(str(r.get("request")))}</th>'
            f"<td>{escape(str(r.get('tenant')))}</td>"
            f'<td class="status">{verdict}<span class="code">{escape(shown)}</span></td>'
            f'<td class="text"><code>{got}</code></td>'
            f'<td class="text"><code>{single}</code>{same}</td></tr>'
        )
    line = ""
    if summary:
        line = f'<p class="replay-summary">{escape(str(summary.get("line", "")))}</p>'
    return (
        f'{line}<table class="responses"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
