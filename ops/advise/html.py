"""``kvproof advise --html``: the advice as one self-contained page, in the report's style.

Drawn from ``AdviseRun.to_json()`` (the document ``--json`` prints) with the report's page
and engine words (``checker/report``): the verdict, the variant the code is, each
counterexample as what the engines did (a numbered list, engine words only), the
assumptions with what they ask of this deployment, and the fix.
"""

from __future__ import annotations

from html import escape
from typing import Any

from kvproof.checker.report.engine_words import Voice, step_words, voice_of
from kvproof.checker.report.html_page import document, section


def _steps(rows: list[dict[str, Any]], voice: Voice) -> str:
    items = "".join(f"<li>{escape(t)}</li>" for t in step_words(rows, voice))
    return f'<ol class="engine-steps">{items}</ol>'


def _verdicts(found: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{escape(f['name'])}</td><td>{escape(f['kind'])}</td>"
        f'<td class="{"ok" if f["verdict"] == "holds" else "bad"}">{escape(f["verdict"])}'
        + (f" ({f['steps']} steps)" if f["verdict"] != "holds" else "")
        + "</td></tr>"
        for f in found["verdicts"]
    )
    head = "<thead><tr><th>property</th><th>kind</th><th>verdict</th></tr></thead>"
    return f'<table class="advise-verdicts">{head}<tbody>{rows}</tbody></table>'


def _counterexamples(found: dict[str, Any]) -> str:
    voice = voice_of(found["engine"], "push" if found["push"] else "pull")
    out = []
    for f in found["verdicts"]:
        if f["verdict"] == "holds":
            continue
        out.append(
            f"<h3>{escape(f['name'])} violated in {f['steps']} steps</h3>"
            f'<p class="why">{escape(f["story"])}</p>{_steps(f["trace"], voice)}'
        )
    return "".join(out)


def _assumptions(doc: dict[str, Any]) -> str:
    out = []
    for a in doc["assessment"]["assumptions"]:
        text = f"<p><strong>{escape(a['name'])}</strong>: {escape(doc['meanings'][a['name']])}.</p>"
        if a["needed"] and a["without_it"]:
            steps = f" in {a['steps']} steps" if a["steps"] else ""
            text += f"<p>Without it, <code>{escape(a['without_it'])}</code> is violated{steps}.</p>"
            if a["story"]:
                text += f'<p class="note">{escape(a["story"])}</p>'
        out.append(f'<div class="assumption">{text}</div>')
    return "".join(out)


def _fix(doc: dict[str, Any]) -> str:
    fix = doc["fix"]
    if doc["verdict"] == "safe":
        return ""
    if fix is None:
        return section("What makes it safe", "<p>No release or setting kvproof knows.</p>", "fix")
    under = f" under {', '.join(fix['assumptions'])}" if fix["assumptions"] else ""
    body = (
        f'<p class="verdict holds">{escape(fix["change"])}</p>'
        f"<p>Then the code behaves as <code>{escape(fix['variant'])}</code> (conform: "
        f"<code>{escape(fix['deployment'])}</code>), which is safe{escape(under)} "
        "(check and liveness).</p>"
    )
    return section("What makes it safe", body, "fix")


def advise_page(doc: dict[str, Any]) -> str:
    dep, m, found = doc["deployment"], doc["match"], doc["assessment"]
    label = f"{dep['engine']}=={dep['version']}"
    given = ", ".join(f"{k}={v}" for k, v in {**dep["env"], **dep["server_args"]}.items())
    safe = doc["verdict"] == "safe"
    names = [a["name"] for a in found["assumptions"]] if found else []
    verdict = ("SAFE" + (f" under {', '.join(names)}" if names else "")) if safe else "UNSAFE"
    head = (
        f"<h1>kvproof advise {escape(label)}</h1>"
        f'<p class="subtitle">{escape(given or "the release default settings")}</p>'
        f'<p class="verdict{" holds" if safe else ""}">{escape(verdict)}</p>'
    )
    parts = [head]
    if found is None:
        parts.append("<p>The release's code agrees with no variant under these settings.</p>")
    else:
        same = (
            f" The same code as <code>{escape(', '.join(m['same_code']))}</code> "
            "(without the assumptions)."
            if m["same_code"]
            else ""
        )
        parts.append(
            section(
                "Your code behaves as",
                f"<p><code>{escape(m['variant'])}</code>: {escape(m['engine'])} "
                f"{escape(m['release'])}'s own decision code agreed with it (conform, adapter "
                f"{escape(m['adapter'])}).{same}"
                "</p>",
                "match",
            )
        )
        parts.append(section("Verdicts", _verdicts(found), "verdicts"))
        if not found["safe"]:
            parts.append(section("What the engines did", _counterexamples(found), "stories"))
        if found["assumptions"]:
            parts.append(section("What the verdicts rest on", _assumptions(doc), "assumptions"))
    parts.append(_fix(doc))
    body = f'<div class="kvproof-report">{"".join(parts)}</div>'
    return document(f"kvproof advise {label}", body)
