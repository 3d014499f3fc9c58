"""The message sequence chart: one lane per actor, one arrow per event, time going down.

SPIN draws its counterexamples this way, and an incident review reads it the same way: who
told whom what, in which order. Lanes are the actors of ``spec/handoff.md``; each action
of the handoff is an arrow between two of them (a self-arrow for local decisions). The
step that breaks the invariant is drawn on a marked band with a warning sign and the
invariant's name, so no colour alone carries it. Long traces are folded around that step.
A lasso's loop (issue #29) is a band with an arrow from its last step back to its first,
and the closing row says "∞ forever" of what the loop never resolves.
"""

from __future__ import annotations

from html import escape
from typing import Any

from kvproof.checker.report.trace_view import TraceView, reads

LANES = ("client", "router", "prefill", "transfer engine", "decode")
STATUS = {"ok": "200", "rejected": "400", "error": "500", "aborted": "aborted", "none": ""}

LANE_W = 150
ROW_H = 42
TOP = 46
LEFT = 60
FOLD_LIMIT = 200  # steps; over this the chart is folded around the violating step
# A lasso's bracket, right of the last lane: clear of decode's self-arrow labels ("alloc(r0,
# p0)", "frees without ACK" reach ~130 px past the lane; the browser test measures it).
LOOP_GAP = 110


def route(view: TraceView, step: dict[str, Any]) -> tuple[str, str, str]:
    """(from lane, to lane, extra label) of one step (a ``trace_rows`` row)."""
    r = step["args"].get("r")
    after = step["step"]
    now = view.value(after, "resp", (r,), "none") if r is not None else "none"
    resp = STATUS.get(str(now), "") if r is not None else ""
    before = view.value(after - 1, "resp", (r,), "none") if r is not None else "none"
    answered = resp if resp and before != now else ""
    sender = "prefill" if view.push else "decode"
    ph = r in view.placeholders
    # Pull mode (vLLM NixlConnector): decode reads prefill's blocks.
    move = "RDMA write" if view.push else "RDMA read of prefill's blocks"
    arrived = "over prefill's limit → 1-token placeholder" if ph else ""
    if answered:
        arrived = f"→ {answered}"
    table = {
        "arrive": ("client", "router", arrived),
        "alloc": ("decode", "decode", ""),
        "send": ("decode", "prefill", "page indices"),
        "post": (sender, "transfer engine", "placeholder's only write" if ph else move),
        "land": ("transfer engine", "decode", "write lands" if view.push else "read lands"),
        "p_abort": ("router", "prefill", "abort"),
        "done": ("prefill" if view.push else "transfer engine", "decode", _poll(view, step)),
        "fail": ("prefill" if view.push else "transfer engine", "decode", "Failed"),
        "commit": ("decode", "client", f"HTTP {answered}" if answered else "reads pages"),
        "step": ("decode", "decode", "reads pages"),
        "finish": ("decode", "client", "finished; pages freed"),
        "abort": ("decode", "prefill", "ABORT"),
        "abort_seen": ("prefill", "prefill", "sees ABORT"),
        "ack": ("prefill", "decode", "drained"),
        "timeout": ("decode", "decode", "frees without ACK"),
        "expire": ("prefill", "prefill", "lease expires: blocks freed (#52234)"),
        "stale_ack": ("prefill", "decode", "late ABORT_ACK"),
    }
    return table.get(step["action"], ("router", "router", ""))


def _poll(view: TraceView, step: dict[str, Any]) -> str:
    r = step["args"].get("r")
    poll = view.value(step["step"], "poll", (r,), "") if r is not None else ""
    return {"success": "Success", "failed": "Failed"}.get(str(poll), "")


def visible_steps(n: int, focus: int | None, limit: int = FOLD_LIMIT) -> list[int | None]:
    """Step numbers to draw, ``None`` where steps are folded away (traces over ``limit``)."""
    if n <= limit:
        return list(range(1, n + 1))
    focus = focus or n
    keep = set(range(1, 11)) | set(range(max(1, focus - 120), min(n, focus + 30) + 1))
    keep |= set(range(max(1, n - 9), n + 1))
    out: list[int | None] = []
    for i in range(1, n + 1):
        if i in keep:
            out.append(i)
        elif out and out[-1] is not None:
            out.append(None)
    return out


def lane_x(lane: str) -> int:
    return LEFT + LANES.index(lane) * LANE_W + LANE_W // 2


def render(view: TraceView) -> str:
    """The chart as inline SVG."""
    focus = view.violated_step if view.loop is None else view.loop + 1
    rows = visible_steps(len(view.steps), focus)
    width = LEFT + LANE_W * len(LANES) + 170 + (LOOP_GAP if view.loop is not None else 0)
    # a lasso's closing row (back to, forever) below the last step needs a second line
    height = TOP + ROW_H * (len(rows) + 1) + (ROW_H // 2 if view.loop is not None else 0)
    parts = [
        f'<svg class="msc" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-labelledby="msc-title">',
        '<title id="msc-title">message sequence chart of the trace</title>',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'class="arrowhead"/></marker></defs>',
    ]
    for lane in LANES:
        x = lane_x(lane)
        parts.append(
            f'<g class="lane" data-lane="{escape(lane)}">'
            f'<text class="lane-name" x="{x}" y="22" text-anchor="middle">{escape(lane)}</text>'
            f'<line class="lifeline" x1="{x}" y1="30" x2="{x}" y2="{height - 8}"/></g>'
        )
    folded = 0
    for row, number in enumerate(rows):
        y = TOP + ROW_H * row + ROW_H // 2
        if number is None:
            nxt = next((s for s in rows[row + 1 :] if s is not None), len(view.steps) + 1)
            prev = next(s for s in reversed(rows[:row]) if s is not None)
            folded += nxt - prev - 1
            parts.append(
                f'<g class="fold"><text x="{LEFT + 4}" y="{y + 4}">⋯ steps {prev + 1}–'
                f"{nxt - 1} folded ({nxt - prev - 1} steps) ⋯</text></g>"
            )
            continue
        parts.append(_arrow(view, view.steps[number - 1], y, width))
    if view.loop is not None:
        parts.append(_loop(view, rows, width))
    parts.append("</svg>")
    note = f'<p class="note">{folded} steps folded around the violating step.</p>' if folded else ""
    return "".join(parts) + note


def _arrow(view: TraceView, step: dict[str, Any], y: int, width: int) -> str:
    src, dst, extra = route(view, step)
    number, label = step["step"], step["label"]
    bad = view.violated_step == number
    stale = any(s for _, s in reads(view, step))
    cls = "msg" + (" violation" if bad else "") + (" stale-read" if stale else "")
    cls += " in-loop" if view.in_loop(number) else ""
    out = [f'<g class="{cls}" data-step="{number}" data-action="{escape(step["action"])}">']
    tip = f"step {number}: {label}" + (f" ({extra})" if extra else "")
    out.append(f"<title>{escape(tip)}</title>")
    if bad:
        out.append(
            f'<rect class="band" x="4" y="{y - ROW_H // 2 + 2}" width="{width - 8}" '
            f'height="{ROW_H - 4}" rx="4"/>'
        )
    out.append(f'<text class="step-no" x="{LEFT - 12}" y="{y + 4}" text-anchor="end">')
    out.append(f"{number}</text>")
    x1, x2 = lane_x(src), lane_x(dst)
    if x1 == x2:
        out.append(
            f'<path class="arrow" d="M{x1},{y - 8} h26 v12 h-24" marker-end="url(#arrow)" '
            'fill="none"/>'
        )
        tx, anchor = x1 + 32, "start"
    else:
        out.append(
            f'<line class="arrow" x1="{x1}" y1="{y + 2}" x2="{x2}" y2="{y + 2}" '
            'marker-end="url(#arrow)"/>'
        )
        tx, anchor = (x1 + x2) // 2, "middle"
    out.append(
        f'<text class="msg-label" x="{tx}" y="{y - 4}" text-anchor="{anchor}">'
        f"{escape(label)}</text>"
    )
    if extra:
        status = " status" if dst == "client" and extra.startswith("HTTP") else ""
        out.append(
            f'<text class="msg-extra{status}" x="{tx}" y="{y + 16}" text-anchor="{anchor}">'
            f"{escape(extra)}</text>"
        )
    r = step["args"].get("r")
    never = view.forever_of(f"r{r}") if step["action"] == "arrive" and r is not None else None
    if never:  # the request the loop never resolves, marked where it enters
        out.append(
            f'<text class="forever-mark" data-forever="r{r}" x="{max(x1, x2) + 10}" '
            f'y="{y + 6}">∞ forever: {escape(never.removeprefix(f"request r{r} is "))}</text>'
        )
    if bad:
        out.append(
            f'<text class="violation-mark" x="{width - 10}" y="{y + 4}" text-anchor="end">'
            f"⚠ violates {escape(view.violated or '')}</text>"
        )
    out.append("</g>")
    return "".join(out)


def _loop(view: TraceView, rows: list[int | None], width: int) -> str:
    """A lasso's loop, drawn as one: a bracket right of the loop's rows with an arrow from
    its last step back up to its first, and, below the last step, where the run goes back
    to and what stays unresolved forever (TLC's "Back to state N", SPIN's cycle mark). An
    empty loop (the liveness search's stutter: its last state repeats, no fair step being
    enabled there) has the mark below the last step and no bracket."""
    loop, n = view.loop or 0, len(view.steps)
    inside = [i for i, number in enumerate(rows) if number is not None and number > loop]
    if inside:
        first, last = inside[0], inside[-1]
        y1 = TOP + ROW_H * first + ROW_H // 2 - 6
        y2 = TOP + ROW_H * last + ROW_H // 2 + 6
        x = LEFT + LANE_W * len(LANES) + LOOP_GAP
        tip = f"steps {loop + 1}–{n} repeat forever: after step {n}, back to step {loop + 1}"
        out = [
            f'<g class="loop" data-loop-from="{n}" data-loop-to="{loop + 1}">',
            f"<title>{escape(tip)}</title>",
            f'<rect class="loop-band" x="4" y="{y1 - ROW_H // 2 + 8}" width="{x - 8}" '
            f'height="{y2 - y1 + ROW_H - 16}" rx="4"/>',
            f'<path class="loop-arrow" d="M{x - 14},{y2} h26 V{y1} h-24" '
            'marker-end="url(#arrow)" fill="none"/>',
            f'<text class="loop-mark" x="{x + 18}" y="{(y1 + y2) // 2 + 4}">↺ repeats</text>',
        ]
        back = f"↺ after step {n}, back to step {loop + 1}: the loop repeats forever"
    else:  # loop == n: the run stays in its last state
        out = [f'<g class="loop" data-loop-from="{n}" data-loop-to="{n}">']
        back = f"↺ after step {n}, the run stays here forever: no fair step is enabled"
    y = TOP + ROW_H * len(rows) + ROW_H // 2
    out.append(f'<text class="loop-back" x="{LEFT}" y="{y - 4}">{escape(back)}</text>')
    said = "; ".join(text for _, text in view.forever)
    if said:
        out.append(
            f'<text class="forever-mark" x="{LEFT}" y="{y + 14}">∞ forever: {escape(said)}</text>'
        )
    out.append("</g>")
    return "".join(out)
