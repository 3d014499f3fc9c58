"""The decode page pool over time: pages by steps, what each page is at each step.

A row per decode page, a column per state (the initial one, then after each step). A cell
says who owns the page (decode's page table), whose KV its bytes hold (pages are never
zeroed: at first every page holds KV of an earlier request outside the trace), the writes
in flight into it, and, in the column of a decode read, whether the page was read fresh or
stale. Every mark is a symbol and a word as well as a colour or pattern.
"""

from __future__ import annotations

from html import escape

from kvproof.checker.report.engine_words import page_word
from kvproof.checker.report.msc import visible_steps
from kvproof.checker.report.trace_view import TraceView, holders, inflight, owner, page_extra, reads


def render(view: TraceView) -> str:
    """The grid as an HTML table, with the stale read called out beneath it."""
    pages = view.sizes.get("Page", 0)
    if not pages or not view.has("owns"):
        return '<p class="note">This protocol has no decode page pool to draw.</p>'
    focus = view.violated_step if view.loop is None else view.loop + 1
    cols: list[int | None] = [0, *visible_steps(len(view.steps), focus)]
    read_at = {s["step"]: dict(reads(view, s)) for s in view.steps}
    head = ['<tr><th scope="col">page</th>']
    for k in cols:
        if k is None:
            head.append('<th class="fold" scope="col">⋯</th>')
        elif k == 0:
            head.append('<th scope="col"><span class="col-no">0</span>initial</th>')
        else:
            step = view.steps[k - 1]
            cls = ' class="violation"' if k == view.violated_step else ""
            cls = ' class="in-loop"' if view.in_loop(k) else cls
            mark = "⚠ " if k == view.violated_step else ""
            mark = "↺ " if view.loop is not None and k == view.loop + 1 else mark
            head.append(
                f'<th scope="col"{cls} data-step="{k}"><span class="col-no">{mark}{k}</span>'
                f"{escape(step['label'])}</th>"
            )
    if view.loop is not None:
        head.append(
            f'<th class="loop-back" scope="col"><span class="col-no">↺ {view.loop + 1}</span>'
            f"back to step {view.loop + 1}, forever</th>"
        )
    head.append("</tr>")
    idle = [p for p in range(pages) if _untouched(view, p)]
    body = []
    for p in (p for p in range(pages) if p not in idle):
        never = view.forever_of(f"p{p}")
        mark = '<br><span class="forever-mark">∞ forever</span>' if never else ""
        cls = ' class="forever"' if never else ""
        row = [f'<tr data-page="p{p}"{cls}><th scope="row">p{p}{mark}</th>']
        row += [
            '<td class="fold">⋯</td>' if k is None else _cell(view, k, p, read_at.get(k, {}))
            for k in cols
        ]
        if view.loop is not None:
            row.append(_back_cell(never))
        row.append("</tr>")
        body.append("".join(row))
    if idle:
        names = ", ".join(f"p{p}" for p in idle)
        body.append(
            f'<tr class="untouched"><th scope="row">{names}</th>'
            f'<td colspan="{len(cols) + (view.loop is not None)}">'
            "free, old KV at every step: no request allocated, wrote or read them</td></tr>"
        )
    return (
        '<div class="grid-scroll"><table class="pool">'
        f"<thead>{''.join(head)}</thead><tbody>{''.join(body)}</tbody></table></div>"
    ) + _callout(view, read_at)


def _back_cell(never: str | None) -> str:
    """The column after a lasso's last step: the run goes back to the loop's start; a page
    the loop never returns is marked "forever" (a symbol and words, not colour alone)."""
    if never is None:
        return '<td class="loop-back">↺</td>'
    return (
        f'<td class="loop-back forever" title="{escape(never)}">'
        f'<span class="forever-mark">∞ forever</span><br>{escape(never)}</td>'
    )


def _untouched(view: TraceView, p: int) -> bool:
    return all(
        not (owner(view, k, p) or holders(view, k, p) or inflight(view, k, p))
        and not page_extra(view, k, p)
        for k in range(len(view.states))
    )


def _cell(view: TraceView, k: int, p: int, read: dict[int, bool]) -> str:
    owners = owner(view, k, p)
    held = holders(view, k, p)
    writes = inflight(view, k, p)
    classes = ["cell", "owned" if owners else "free"]
    lines = [f'<span class="own">{" ".join(f"r{r}" for r in owners) or "free"}</span>']
    if held:
        ph = any(h.split(",")[0] in {f"r{x}" for x in view.placeholders} for h in held)
        note = " (placeholder)" if ph else ""
        if view.has("at_pos") and not view.value(k, "at_pos", (p,), True):
            note += " + leftover slots" if ph else ", wrong slots"
        lines.append(f'<span class="kv">KV {escape(", ".join(held))}{note}</span>')
    else:
        classes.append("old")
        lines.append('<span class="kv">old KV</span>')
    if view.has("filled") and owners and not view.value(k, "filled", (p,), False):
        lines.append('<span class="unwritten">not written</span>')
    for r in writes:
        classes.append("inflight")
        lines.append(f'<span class="write">⇣ write r{r}</span>')
    for extra in page_extra(view, k, p):
        if extra == "stray":  # ghost: a write landed after its writer released the page
            new = k > 0 and "stray" not in page_extra(view, k - 1, p)
            classes.append("stale" if new else "stray")
            lines.append('<span class="stale-mark">✖ STRAY write</span>')
            continue
        lines.append(f'<span class="extra">{escape(page_word(extra))}</span>')
    if p in read:
        if read[p]:
            classes.append("stale")
            lines.append('<span class="read stale-mark">✖ STALE read</span>')
        else:
            classes.append("read")
            lines.append('<span class="read">◉ read</span>')
    if k == view.violated_step:
        classes.append("violation-col")
    if view.in_loop(k):
        classes.append("in-loop")
    title = f"p{p} after step {k}" if k else f"p{p} initially"
    return (
        f'<td class="{" ".join(classes)}" data-step="{k}" title="{escape(title)}">'
        f"{'<br>'.join(lines)}</td>"
    )


def _callout(view: TraceView, read_at: dict[int, dict[int, bool]]) -> str:
    stale = [(k, p) for k, pages in read_at.items() for p, bad in pages.items() if bad]
    if not stale:
        return ""
    items = []
    for k, p in stale[:6]:
        step = view.steps[k - 1]
        items.append(
            f'<li class="stale-read" data-step="{k}" data-page="p{p}">✖ '
            f"<strong>p{p}</strong> read stale by <code>{escape(step['label'])}</code> "
            f"(step {k})</li>"
        )
    why = f'<p class="why"><strong>Why:</strong> {escape(view.explanation)}</p>'
    return f'<ul class="stale-list">{"".join(items)}</ul>{why if view.explanation else ""}'
