"""``advise``'s text for people: the verdict first, then why, then what to change.

Prints from ``AdviseRun.to_json()`` (the same document ``--json`` prints), wrapped to the
terminal (at most 100 columns; a pipe gets 100), so every line stays readable.
"""

from __future__ import annotations

import shutil
import textwrap
from typing import Any, Protocol

from kvproof.checker.report.trace_view import cells_text
from kvproof.ops.advise.run import text_of, variant_summary


class Wrap(Protocol):
    def __call__(self, text: str, indent: int = 0) -> list[str]: ...


def _wrap(width: int) -> Wrap:
    def wrap(text: str, indent: int = 0) -> list[str]:
        pad = " " * indent
        return textwrap.wrap(text, width, initial_indent=pad, subsequent_indent=pad + "  ") or [""]

    return wrap


def _settings(dep: dict[str, Any]) -> str:
    pairs = {**dep["env"], **dep["server_args"]}
    given = [f"{k}={text_of(v)} ({dep['given'].get(k, '?')})" for k, v in pairs.items()]
    return " with " + ", ".join(given) if given else " with the release's default settings"


def lines(doc: dict[str, Any], *, raw: bool = False, width: int | None = None) -> list[str]:
    wrap = _wrap(width or min(100, shutil.get_terminal_size((100, 24)).columns))
    dep, m, found = doc["deployment"], doc["match"], doc["assessment"]
    out: list[str] = []
    label = f"{dep['engine']}=={dep['version']}"
    if found is None:
        out += wrap(
            f"{label}{_settings(dep)}: NO VERDICT. The release's code agrees with no variant "
            "of the catalog under these settings (conform), so kvproof has no model of it."
        )
        return out + _fix(doc, wrap)
    names = [a["name"] for a in found["assumptions"]]
    head = (
        "SAFE" + (f" under {', '.join(names)}" if names else "")
        if doc["verdict"] == "safe"
        else "UNSAFE"
    )
    out += wrap(f"{label}{_settings(dep)}: {head}")
    how = (
        "its [upstream] table lists this release under these settings"
        if m["by_table"]
        else ("no variant's [upstream] table lists this release under these settings")
    )
    walks = next(t["walks"] for t in m["tried"] if t["variant"] == m["variant"])
    out += wrap(
        f"Your code behaves as {m['variant']}: {m['engine']} {m['release']}'s own decision "
        f"code agreed with it on {walks} walks with faults (conform, adapter "
        f"{m['adapter']}); {how}."
    )
    out += wrap(variant_summary(m["variant"]), 2)
    if m["same_code"]:
        out += wrap(
            f"The same code as {', '.join(m['same_code'])} (its switches without the "
            "assumptions: what happens when one breaks).",
            2,
        )
    if m["also_agrees_with"]:
        out += wrap(
            f"The code also agrees with {', '.join(m['also_agrees_with'])} (switches conform "
            "does not drive, or a table that does not list this release).",
            2,
        )
    out.append("")
    bad = [f for f in found["verdicts"] if f["verdict"] != "holds"]
    good = [f["name"] for f in found["verdicts"] if f["verdict"] == "holds"]
    if good:
        out += wrap(f"Holds: {', '.join(good)}.")
    for f in bad:
        out += wrap(f"VIOLATED {f['name']} ({f['kind']}, {f['steps']} steps):")
        out += wrap(f["story"], 2)
        if raw:
            out += [f"    {row['label']}: " + cells_text(row) for row in f["trace"]]
    if found["assumptions"]:
        out += ["", "The verdicts rest on these assumptions:"]
    for a in found["assumptions"]:
        out += wrap(f"{a['name']}: {doc['meanings'][a['name']]}.", 2)
        if a["needed"] and a["without_it"]:
            steps = f" in {a['steps']} steps" if a["steps"] else ""
            out += wrap(f"Without it, {a['without_it']} is violated{steps}.", 4)
            if a["story"]:
                out += wrap(a["story"], 4)
        elif a["needed"] is False:
            out += wrap("Not needed: the verdicts hold without it.", 4)
    return out + _fix(doc, wrap)


def _fix(doc: dict[str, Any], wrap: Wrap) -> list[str]:
    if doc["verdict"] == "safe":
        return []
    fix = doc["fix"]
    if fix is None:
        return ["", *wrap("No release or setting kvproof knows makes this safe.")]
    under = f" under {', '.join(fix['assumptions'])}" if fix["assumptions"] else ""
    return [
        "",
        *wrap(
            f"What makes it safe: {fix['change']}. Then the code behaves as {fix['variant']} "
            f"(conform: {fix['deployment']}), which is safe{under} (check and liveness); run "
            f"`kvproof advise {fix['deployment']}` for what that asks of the deployment."
        ),
    ]
