"""Self-contained HTML reports: counterexamples, replays, proofs, state graphs.

One file, inline CSS and SVG, no script and no fetch: it opens from disk, offline, and
prints to PDF. ``trace_page`` is the counterexample report (message sequence chart, page
pool over time, the engine's responses when the trace was replayed); ``inline`` is the same
markup for a notebook cell. The renderers take plain data: the CLI runs the model, the
replay or the prover, and passes the results in.

    html = trace_page(trace, protocol, variant=load_variant("sglang-0.5.19-pd"))
    Path("incident.html").write_text(html)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields
from html import escape
from typing import Any

from kvproof import __version__
from kvproof.checker.report import msc, pool_grid
from kvproof.checker.report.assets import CSS
from kvproof.checker.report.trace_view import TraceView, build
from kvproof.model.lang.dsl import Protocol
from kvproof.model.lang.trace import Trace
from kvproof.spec.variant import Variant

PAGE_CSS = """
:root { color-scheme: light dark; }
html, body { margin: 0; background: #ffffff; }
@media (prefers-color-scheme: dark) { html, body { background: #14181d; } }
@media print { html, body { background: #ffffff; } }
"""


def document(title: str, body: str) -> str:
    """A whole HTML document around report markup."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="kvproof {escape(__version__)}">'
        f"<title>{escape(title)}</title><style>{PAGE_CSS}{CSS}</style></head>"
        f"<body>{body}</body></html>\n"
    )


def section(title: str, content: str, cls: str) -> str:
    return f'<section class="{cls}"><h2>{escape(title)}</h2>{content}</section>'


# -- counterexample report ---------------------------------------------------------------------


def trace_body(
    view: TraceView,
    *,
    variant: Any = None,
    responses: Sequence[Mapping[str, Any]] | None = None,
    replay_summary: Mapping[str, Any] | None = None,
) -> str:
    """The report's markup for one trace (``<div class="kvproof-report">``)."""
    inv = view.violated
    what = f"counterexample to <strong>{escape(inv)}</strong>" if inv else "trace"
    if view.loop is not None:
        never = f" (a run that never satisfies <strong>{escape(inv)}</strong>)" if inv else ""
        what = "lasso" + never
    head = (
        f"<h1>{escape(view.variant)}: {len(view.steps)}-step {what}</h1>"
        f'<p class="subtitle">{sizes_text(view.sizes)}; kvproof {escape(__version__)}</p>'
    )
    if view.loop is not None:
        head += lasso_head(view)
    elif inv:
        step = f" after step {view.violated_step}" if view.violated_step else ""
        statement = f": {escape(view.invariant_statement)}" if view.invariant_statement else ""
        head += f'<p class="verdict">⚠ VIOLATED{step}: <code>{escape(inv)}</code>{statement}</p>'
    head += conform_finding(view.meta, len(view.steps))
    if view.explanation:
        head += f'<p class="why"><strong>Why:</strong> {escape(view.explanation)}</p>'
    if view.initial:
        facts = "; ".join(escape(f) for f in initial_words(view.initial))
        head += f"<p>Initially: {facts} (every page holds KV of earlier requests).</p>"
    for r in view.placeholders:
        head += (
            f"<p>r{r}'s prompt is over prefill's limit: its reject is pending but not honoured, "
            "so prefill runs a 1-token placeholder and writes one page (SGLang #30233).</p>"
        )
    chart = f'<div class="chart-scroll">{msc.render(view)}</div>'
    parts = [
        ("Message sequence chart", chart, "msc-section"),
        ("What the engines did", steps_list(view, variant), "steps-section"),
        ("Decode page pool over time", pool_grid.render(view), "pool-section"),
    ]
    if responses is not None:
        title = "Engine side: what each client got (replay on the reference engine)"
        parts.append((title, engine_side(responses, replay_summary), "engine-section"))
    parts.append(("Legend", legend(view.violated_step, loop=view.loop), "legend-section"))
    if variant is not None:
        parts.append((f"Variant {variant.name}", variant_box(variant), "variant-section"))
    body = "".join(section(*part) for part in parts)
    return f'<div class="kvproof-report">{head}{body}</div>'


def trace_page(
    trace: Trace,
    protocol: Protocol,
    *,
    variant: Any = None,
    responses: Sequence[Mapping[str, Any]] | None = None,
    replay_summary: Mapping[str, Any] | None = None,
    states: Sequence[Any] = (),
) -> str:
    """``states``: the trace's, when the caller holds them (a checked counterexample)."""
    view = build(trace, protocol, states)
    title = f"kvproof: {trace.variant} {trace.violated or 'trace'}"
    body = trace_body(view, variant=variant, responses=responses, replay_summary=replay_summary)
    return document(title, body)


def inline(
    trace: Trace,
    protocol: Protocol | None = None,
    *,
    variant: Any = None,
    responses: Sequence[Any] | None = None,
) -> Any:
    """The report as an ``IPython.display.HTML`` object, for a notebook cell.

    ``protocol`` defaults to the handoff with ``variant``'s switches; ``responses`` may be
    ``ReplayReport.responses`` (objects with ``to_json``) or plain dicts."""
    from IPython.display import HTML

    if protocol is None:
        from kvproof.model.handoff import protocol_of

        if variant is None:
            from kvproof.spec.variant import load_variant

            variant = load_variant(trace.variant)
        protocol = protocol_of(variant, assumed=False)
    if responses is not None:
        responses = [r.to_json() if hasattr(r, "to_json") else dict(r) for r in responses]
    body = trace_body(build(trace, protocol), variant=variant, responses=responses)
    return HTML(f"<style>{CSS}</style>{body}")  # the stylesheet travels with the cell


# -- the engine side of a replayed trace: what each client got, beside the single node's ---
# Plain data (``Answer.to_json()`` rows from ``refimpl/oracle.py``, or the same keys
# from anywhere): the report never runs the engine itself. A foreign canary in a response is
# marked with a flag and the word "foreign" as well as a colour. A row says LEAK only for a
# foreign canary (replay's ``leak``); a 200 whose tokens differ from the single node's
# without one says WRONG ANSWER (replay's ``wrong_answer``).


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


def engine_side(
    responses: Sequence[Mapping[str, Any]], summary: Mapping[str, Any] | None = None
) -> str:
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


# -- shared pieces -------------------------------------------------------------------------------


# A ``kvproof conform`` divergence trace (``checker/conform/trace_out.py``) is a model walk
# that both sides took up to the step where they disagree; its header's ``meta`` says what
# the code did there. Without this head line the page would draw a plain trace and hide the
# finding: where the engine's code left the model, and which switch it contradicts.
FINDINGS = ("divergence", "upstream_exception")


def conform_finding(meta: Mapping[str, Any], steps: int) -> str:
    """The verdict paragraph for a conform trace's ``meta`` (``""`` for any other trace);
    ``steps``: the trace's length, the step after which the two sides disagree."""
    if meta.get("finding") not in FINDINGS or not meta.get("diagnosis"):
        return ""
    stalls = [int(s) for s in meta.get("stalls_after_step") or ()]
    # The walk's time jumps (past the code's lease deadline) are no model step: say where.
    waited = f"; time passed past the code's deadline after step {stalls[-1]}" if stalls else ""
    beats = sorted({int(s) for s in meta.get("beats_after_step") or ()})
    if beats:  # time passing with heartbeats delivered: no fault, but the clock moved
        at = ("step " if len(beats) == 1 else "steps ") + ", ".join(map(str, beats))
        waited += f"; time passed with heartbeats delivered after {at}"
    where = f" after step {steps}" if steps else ""
    out = (
        f'<p class="verdict">⚠ DIVERGES{where}{escape(waited)} ({escape(str(meta["source"]))})'
        f": {escape(str(meta['diagnosis']))}</p>"
    )
    if meta.get("detail"):
        out += (
            f'<p class="why"><strong>Seen:</strong> <code>{escape(str(meta["detail"]))}</code></p>'
        )
    if meta.get("raised"):
        out += f'<p class="why"><strong>The code raised:</strong> {escape(str(meta["raised"]))}</p>'
    return out


def steps_list(view: TraceView, variant: Any = None) -> str:
    """The trace's steps as what the engines did (``engine_words``), numbered like the chart."""
    from kvproof.checker.report.engine_words import step_words, voice_of

    engine = getattr(variant, "engine", "sglang")
    voice = voice_of(engine, "push" if view.push else "pull")
    said = step_words(view.steps, voice)
    items = "".join(f'<li value="{i}">{escape(t)}</li>' for i, t in enumerate(said, start=1))
    return f'<ol class="engine-steps">{items}</ol>'


def initial_words(initial: Sequence[str]) -> list[str]:
    """``over_p(r0)`` -> "r0's prompt is over prefill's limit" (the free initial choices)."""
    said = {
        "over_p": "'s prompt is over prefill's limit",
        "over_d": "'s prompt is over decode's limit",
        "hit": ": decode's prefix cache holds its prompt's head",
    }
    out = []
    for fact in initial:
        name, _, rest = fact.partition("(")
        who = rest.rstrip(")")
        out.append(f"{who}{said[name]}" if name in said and who else fact)
    return out


def sizes_text(sizes: Mapping[str, int]) -> str:
    names = {"Req": "requests", "Page": "decode pages"}
    return ", ".join(f"{n} {names.get(s, s)}" for s, n in sizes.items())


def lasso_head(view: TraceView) -> str:
    """A lasso's verdict: which steps repeat, and each thing the loop never resolves."""
    loop, n = view.loop or 0, len(view.steps)
    name = f": <code>{escape(view.violated)}</code>" if view.violated else ""
    statement = f": {escape(view.invariant_statement)}" if view.invariant_statement else ""
    steps = f"step {n} repeats" if loop + 1 == n else f"steps {loop + 1}–{n} repeat"
    out = f'<p class="verdict">⚠ VIOLATED{name}{statement}; {steps} forever</p>'
    if view.forever:
        items = "".join(
            f'<li data-forever="{escape(t)}"><span class="forever-mark">∞ forever</span> '
            f"{escape(text)}</li>"
            for t, text in view.forever
        )
        out += f'<ul class="forever-list">{items}</ul>'
    return out


def legend(violated_step: int | None = None, *, loop: int | None = None) -> str:
    """The marks of the chart; the violation badge shows this trace's own step (it said
    "8" on every report, a 7-step trace's too); a lasso's two marks when ``loop``."""
    badge = f"⚠ {violated_step}" if violated_step else "⚠ N"
    items = [
        (badge, "the step after which the invariant is false"),
        ("r0", "owner: the page is in request r0's page table"),
        ("free", "no request owns the page"),
        ("KV r0", "the page's bytes are r0's KV"),
        ("old KV", "KV of an earlier request outside the trace (pages are never zeroed)"),
        ("not written", "owned, nothing landed since allocation"),
        ("⇣ write r0", "an RDMA write posted, not landed yet"),
        ("◉ read", "decode read the page: it held fresh KV"),
        ("✖ STALE read", "decode read the page while it held someone else's (or old) KV"),
        ("✖ STRAY write", "a write landed in the page after its writer had released it"),
        ("⚑ foreign", "another tenant's canary in a client's response"),
    ]
    if loop is not None:  # a lasso breaks no invariant at a step: its marks, no ⚠ badge
        items[:1] = [
            (f"↺ {loop + 1}", f"the loop: steps from {loop + 1} to the last repeat forever"),
            ("∞ forever", "what the loop never resolves"),
        ]
    rows = "".join(
        f'<dt><span class="swatch">{a}</span></dt><dd>{escape(b)}</dd>' for a, b in items
    )
    return f'<dl class="legend">{rows}</dl>'


def _link(source: str) -> str:
    if source.startswith(("https://", "http://")):
        return f'<a href="{escape(source)}">{escape(source)}</a>'
    return escape(source)


def variant_box(variant: Variant) -> str:
    """Summary, switches, assumptions (when the variant has them) and sources."""
    sw = variant.switches
    rows = "".join(
        f"<tr><th scope='row'><code>{escape(f.name)}</code></th>"
        f"<td><code>{escape(str(getattr(sw, f.name)))}</code></td></tr>"
        for f in fields(sw)
    )
    out = [
        f"<p>{escape(variant.summary)}</p>",
        f'<table class="switches"><tbody>{rows}</tbody></table>',
    ]
    for title, items in (
        ("Assumptions", [escape(f"{name}: {why}") for name, why in variant.assume.items()]),
        ("Sources", [_link(str(s)) for s in variant.sources]),
    ):
        if items:
            li = "".join(f"<li>{item}</li>" for item in items)
            out.append(f"<h3>{title}</h3><ul class='{title.lower()}'>{li}</ul>")
    return "".join(out)
